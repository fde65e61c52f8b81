#include "streams/state_machine.h"

#include <gtest/gtest.h>

namespace weir::streams {
namespace {

// The sources an outcome's releases name (in order).
std::vector<std::string> sources(const std::vector<fork_release_command>& releases) {
  std::vector<std::string> out;
  for (const auto& r : releases) out.push_back(r.source);
  return out;
}

constexpr std::int64_t t0 = 1'700'000'000'000;

payload bytes(std::string s, std::uint32_t messages = 0) {
  payload p;
  if (!s.empty()) p.bytes = make_chunk(std::move(s));
  p.messages = messages;
  return p;
}

std::string read_all(const state_machine& sm, std::string_view path, std::uint64_t from = 0,
                     std::size_t max = 1 << 20) {
  read_result r = sm.read(path, stream_offset(from), max);
  EXPECT_EQ(r.code, errc::ok);
  std::string out;
  for (const auto& s : r.plan.slices) out.append(s.view());
  return out;
}

create_command make_create(std::string path, std::string ct = "text/plain", std::string body = "") {
  create_command c;
  c.path = std::move(path);
  c.content_type = std::move(ct);
  c.initial = bytes(std::move(body));
  c.now_ms = t0;
  return c;
}

append_command make_append(std::string path, std::string body, std::string ct = "text/plain") {
  append_command c;
  c.path = std::move(path);
  c.content_type = std::move(ct);
  c.body = bytes(std::move(body));
  c.now_ms = t0;
  return c;
}

TEST(state_machine, create_then_idempotent_create_then_mismatch) {
  state_machine sm;
  outcome a = sm.create(make_create("/s", "text/plain", "hello"));
  EXPECT_EQ(a.code, errc::ok);
  EXPECT_TRUE(a.created);
  EXPECT_EQ(a.meta->tail.value(), 5u);
  outcome b = sm.create(make_create("/s", "Text/Plain; charset=utf-8"));
  EXPECT_EQ(b.code, errc::ok);
  EXPECT_FALSE(b.created);
  EXPECT_EQ(sm.create(make_create("/s", "application/json")).code, errc::config_mismatch);
  create_command closed = make_create("/s");
  closed.closed = true;
  EXPECT_EQ(sm.create(closed).code, errc::config_mismatch);
  create_command ttl = make_create("/s");
  ttl.expiry.ttl_seconds = 10;
  EXPECT_EQ(sm.create(ttl).code, errc::config_mismatch);
}

TEST(state_machine, create_without_content_type_defaults_to_octet_stream) {
  state_machine sm;
  outcome a = sm.create(make_create("/s", ""));
  EXPECT_EQ(a.meta->content_type, "application/octet-stream");
  EXPECT_EQ(sm.create(make_create("/s", "")).code, errc::ok);
}

TEST(state_machine, append_moves_tail_and_reads_back) {
  state_machine sm;
  (void)sm.create(make_create("/s"));
  outcome a = sm.append(make_append("/s", "abc"));
  EXPECT_EQ(a.code, errc::ok);
  EXPECT_TRUE(a.appended);
  EXPECT_EQ(a.meta->tail.value(), 3u);
  (void)sm.append(make_append("/s", "de"));
  EXPECT_EQ(read_all(sm, "/s"), "abcde");
  EXPECT_EQ(read_all(sm, "/s", 3), "de");
  EXPECT_EQ(read_all(sm, "/s", 1), "bcde");  // byte streams may resume anywhere
}

TEST(state_machine, append_errors) {
  state_machine sm;
  EXPECT_EQ(sm.append(make_append("/nope", "x")).code, errc::not_found);
  (void)sm.create(make_create("/s"));
  EXPECT_EQ(sm.append(make_append("/s", "x", "application/json")).code, errc::content_type_mismatch);
  append_command seq = make_append("/s", "x");
  seq.stream_seq = "2";
  EXPECT_EQ(sm.append(seq).code, errc::ok);
  seq.stream_seq = "10";  // lexicographic: "10" < "2"
  EXPECT_EQ(sm.append(seq).code, errc::seq_regression);
  seq.stream_seq = "2";
  EXPECT_EQ(sm.append(seq).code, errc::seq_regression);
  seq.stream_seq = "3";
  EXPECT_EQ(sm.append(seq).code, errc::ok);
}

TEST(state_machine, json_errors_are_reported_after_state_checks) {
  state_machine sm;
  (void)sm.create(make_create("/j", "application/json"));
  append_command bad = make_append("/j", "{", "application/json");
  bad.body.json_invalid = true;
  EXPECT_EQ(sm.append(bad).code, errc::invalid_json);
  append_command empty = make_append("/j", "", "application/json");
  empty.body.json_empty_array = true;
  EXPECT_EQ(sm.append(empty).code, errc::empty_json_array);
  create_command put = make_create("/j2", "application/json", "x");
  put.initial.json_invalid = true;
  EXPECT_EQ(sm.create(put).code, errc::invalid_json);
}

TEST(state_machine, json_reads_keep_record_boundaries) {
  state_machine sm;
  create_command c = make_create("/j", "application/json");
  c.initial = bytes("1,2,", 2);
  (void)sm.create(c);
  append_command a = make_append("/j", "", "application/json");
  a.body = bytes("3,", 1);
  (void)sm.append(a);
  read_result r = sm.read("/j", stream_offset(0), 1);  // limit below one record: still one record
  ASSERT_EQ(r.plan.slices.size(), 1u);
  EXPECT_EQ(r.plan.slices[0].view(), "1,2,");
  EXPECT_FALSE(r.plan.up_to_date);
  r = sm.read("/j", r.plan.next, 1);
  EXPECT_EQ(r.plan.slices[0].view(), "3,");
  EXPECT_TRUE(r.plan.up_to_date);
}

TEST(state_machine, chunk_limit_splits_byte_streams) {
  state_machine sm;
  (void)sm.create(make_create("/s", "application/octet-stream", "0123456789"));
  read_result r = sm.read("/s", std::nullopt, 4);
  EXPECT_EQ(r.plan.bytes, 4u);
  EXPECT_EQ(r.plan.next.value(), 4u);
  EXPECT_FALSE(r.plan.up_to_date);
  EXPECT_EQ(read_all(sm, "/s", 4), "456789");
}

TEST(state_machine, close_only_and_append_after_close) {
  state_machine sm;
  (void)sm.create(make_create("/s", "text/plain", "a"));
  append_command close;
  close.path = "/s";
  close.close = true;
  close.now_ms = t0;
  outcome o = sm.append(close);
  EXPECT_EQ(o.code, errc::ok);
  EXPECT_TRUE(o.closed_now);
  EXPECT_TRUE(o.meta->closed);
  EXPECT_EQ(sm.append(close).code, errc::ok);  // idempotent
  outcome after = sm.append(make_append("/s", "b"));
  EXPECT_EQ(after.code, errc::closed);
  EXPECT_EQ(after.meta->tail.value(), 1u);
  append_command final_append = make_append("/s", "b", "application/json");  // closed wins over type
  final_append.close = true;
  EXPECT_EQ(sm.append(final_append).code, errc::closed);
}

TEST(state_machine, append_and_close_is_atomic) {
  state_machine sm;
  (void)sm.create(make_create("/s"));
  append_command c = make_append("/s", "last");
  c.close = true;
  outcome o = sm.append(c);
  EXPECT_TRUE(o.appended);
  EXPECT_TRUE(o.closed_now);
  EXPECT_EQ(read_all(sm, "/s"), "last");
}

append_command producer_append(std::string id, std::uint64_t epoch, std::uint64_t seq,
                               std::string body = "x") {
  append_command c = make_append("/p", std::move(body));
  c.producer = producer_ref{std::move(id), epoch, seq};
  return c;
}

TEST(state_machine, producer_sequences) {
  state_machine sm;
  (void)sm.create(make_create("/p"));
  EXPECT_EQ(sm.append(producer_append("a", 0, 1)).code, errc::seq_gap);  // new producer must start at 0
  EXPECT_EQ(sm.append(producer_append("a", 0, 0)).code, errc::ok);
  EXPECT_EQ(sm.append(producer_append("a", 0, 1)).code, errc::ok);
  outcome dup = sm.append(producer_append("a", 0, 0));
  EXPECT_EQ(dup.code, errc::ok);
  EXPECT_TRUE(dup.duplicate);
  EXPECT_EQ(dup.producer_seq, 1u);  // highest accepted, not the request's
  outcome gap = sm.append(producer_append("a", 0, 5));
  EXPECT_EQ(gap.code, errc::seq_gap);
  EXPECT_EQ(gap.expected_seq, 2u);
  EXPECT_EQ(gap.received_seq, 5u);
  EXPECT_EQ(sm.append(producer_append("a", 1, 3)).code, errc::epoch_needs_seq_zero);
  EXPECT_EQ(sm.append(producer_append("a", 1, 0)).code, errc::ok);
  outcome stale = sm.append(producer_append("a", 0, 2));
  EXPECT_EQ(stale.code, errc::stale_epoch);
  EXPECT_EQ(stale.producer_epoch, 1u);
  EXPECT_EQ(read_all(sm, "/p"), "xxx");  // duplicates and rejects stored nothing
}

TEST(state_machine, producer_close_dedup) {
  state_machine sm;
  (void)sm.create(make_create("/p"));
  append_command c = producer_append("a", 0, 0, "end");
  c.close = true;
  EXPECT_EQ(sm.append(c).code, errc::ok);
  outcome retry = sm.append(producer_append("a", 0, 0, "other"));
  EXPECT_TRUE(retry.duplicate);  // the tuple that closed the stream
  EXPECT_EQ(sm.append(producer_append("a", 0, 1)).code, errc::closed);
  EXPECT_EQ(sm.append(producer_append("b", 0, 0)).code, errc::closed);
}

TEST(state_machine, delete_and_recreate) {
  state_machine sm;
  (void)sm.create(make_create("/s", "text/plain", "old"));
  delete_command d{"/s", t0};
  outcome o = sm.remove(d);
  EXPECT_EQ(o.code, errc::ok);
  ASSERT_EQ(o.removed.size(), 1u);
  EXPECT_EQ(sm.remove(d).code, errc::not_found);
  outcome again = sm.create(make_create("/s", "text/plain", "new"));
  EXPECT_TRUE(again.created);
  EXPECT_EQ(read_all(sm, "/s"), "new");
}

TEST(state_machine, ttl_expires_and_touch_renews) {
  state_machine sm;
  create_command c = make_create("/t");
  c.expiry.ttl_seconds = 2;
  (void)sm.create(c);
  EXPECT_EQ(sm.touch(touch_command{"/t", t0 + 1500}).code, errc::ok);
  EXPECT_EQ(sm.head("/t", t0 + 3000).code, errc::ok);  // renewed at 1.5 s
  EXPECT_EQ(sm.head("/t", t0 + 3500).code, errc::not_found);
  outcome e = sm.expire(expire_command{"/t", t0 + 3500});
  EXPECT_EQ(e.code, errc::not_found);
  EXPECT_EQ(e.removed.size(), 1u);
  EXPECT_EQ(sm.size(), 0u);
}

TEST(state_machine, expires_at_is_not_renewed) {
  state_machine sm;
  create_command c = make_create("/t");
  c.expiry.expires_at_ms = t0 + 1000;
  (void)sm.create(c);
  (void)sm.touch(touch_command{"/t", t0 + 900});
  EXPECT_EQ(sm.expired(t0 + 1000), std::vector<std::string>{"/t"});
  EXPECT_EQ(sm.append(make_append("/t", "x")).code, errc::ok);  // the command's own time (t0) is before
  append_command late = make_append("/t", "x");
  late.now_ms = t0 + 1000;
  EXPECT_EQ(sm.append(late).code, errc::not_found);
}

fork_spec resolve_fork(state_machine& src, std::string source, std::optional<std::uint64_t> offset,
                       std::uint64_t sub = 0, errc expect = errc::ok) {
  fork_retain_command r;
  r.source = std::move(source);
  if (offset) r.offset = stream_offset(*offset);
  r.sub_offset = sub;
  r.now_ms = t0;
  outcome o = src.fork_retain(r);
  EXPECT_EQ(o.code, expect);
  fork_spec f;
  f.source = r.source;
  f.offset = r.offset;
  f.sub_offset = sub;
  if (o.resolution) {
    f.resolved = *o.resolution;
    f.resolved.retained = true;
  }
  if (o.sub_record) {
    f.resolved.prefix = bytes(std::string(o.sub_record->data.view().substr(0, sub)));
  }
  return f;
}

TEST(state_machine, fork_inherits_then_diverges) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "hello"));
  create_command c = make_create("/fork", "");
  c.fork = resolve_fork(sm, "/src", 3);
  outcome o = sm.create(c);
  EXPECT_TRUE(o.created);
  EXPECT_EQ(o.meta->content_type, "text/plain");
  EXPECT_EQ(read_all(sm, "/fork"), "hel");
  (void)sm.append(make_append("/fork", "p!"));
  (void)sm.append(make_append("/src", " world"));
  EXPECT_EQ(read_all(sm, "/fork"), "help!");
  EXPECT_EQ(read_all(sm, "/src"), "hello world");
  EXPECT_EQ(sm.create(c).code, errc::ok);  // idempotent re-create releases the extra reference
}

TEST(state_machine, fork_errors) {
  state_machine sm;
  (void)resolve_fork(sm, "/missing", std::nullopt, 0, errc::source_not_found);
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  (void)resolve_fork(sm, "/src", 99, 0, errc::bad_fork_offset);
  (void)resolve_fork(sm, "/src", 0, 4, errc::bad_sub_offset);
  (void)resolve_fork(sm, "/src", 3, 1, errc::bad_sub_offset);  // nothing at the tail
  fork_retain_command ct;
  ct.source = "/src";
  ct.content_type = "application/json";
  EXPECT_EQ(sm.fork_retain(ct).code, errc::content_type_mismatch);
}

TEST(state_machine, fork_sub_offset) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abcdef"));
  create_command c = make_create("/f");
  c.fork = resolve_fork(sm, "/src", 0, 4);
  (void)sm.create(c);
  EXPECT_EQ(read_all(sm, "/f"), "abcd");
  create_command mismatch = make_create("/f");
  mismatch.fork = resolve_fork(sm, "/src", 0, 3);
  EXPECT_EQ(sm.create(mismatch).code, errc::config_mismatch);
}

TEST(state_machine, soft_delete_and_cascading_release) {
  state_machine sm;
  (void)sm.create(make_create("/a", "text/plain", "abc"));
  create_command b = make_create("/b");
  b.fork = resolve_fork(sm, "/a", std::nullopt);
  (void)sm.create(b);
  create_command c = make_create("/c");
  c.fork = resolve_fork(sm, "/b", std::nullopt);
  (void)sm.create(c);

  EXPECT_EQ(sm.remove(delete_command{"/a", t0}).code, errc::ok);  // soft: /b references it
  EXPECT_EQ(sm.read("/a", std::nullopt, 100).code, errc::gone);
  EXPECT_EQ(sm.remove(delete_command{"/a", t0}).code, errc::gone);
  EXPECT_EQ(sm.create(make_create("/a")).code, errc::deleted_with_forks);  // not "another configuration"
  (void)resolve_fork(sm, "/a", std::nullopt, 0, errc::source_gone);
  EXPECT_EQ(sm.remove(delete_command{"/b", t0}).code, errc::ok);  // soft: /c references it
  EXPECT_EQ(read_all(sm, "/c"), "abc");

  outcome del_c = sm.remove(delete_command{"/c", t0});
  ASSERT_EQ(sources(del_c.release), std::vector<std::string>{"/b"});
  outcome rel_b = sm.fork_release(fork_release_command{"/b"});
  ASSERT_EQ(sources(rel_b.release), std::vector<std::string>{"/a"});
  outcome rel_a = sm.fork_release(fork_release_command{"/a"});
  EXPECT_EQ(rel_a.removed, std::vector<std::string>{"/a"});
  EXPECT_EQ(sm.size(), 0u);
}

TEST(state_machine, fork_expiry_table) {
  state_machine sm;
  create_command src = make_create("/src");
  src.expiry.ttl_seconds = 60;
  (void)sm.create(src);
  create_command inherit = make_create("/f1");
  inherit.fork = resolve_fork(sm, "/src", std::nullopt);
  EXPECT_EQ(sm.create(inherit).meta->expiry.ttl_seconds, std::optional<std::uint64_t>(60));
  create_command own = make_create("/f2");
  own.expiry.expires_at_ms = t0 + 5;
  own.fork = resolve_fork(sm, "/src", std::nullopt);
  outcome o = sm.create(own);
  EXPECT_FALSE(o.meta->expiry.ttl_seconds.has_value());
  EXPECT_EQ(o.meta->expiry.expires_at_ms, std::optional<std::int64_t>(t0 + 5));
}

TEST(state_machine, list_filters_by_prefix) {
  state_machine sm;
  (void)sm.create(make_create("/v1/a"));
  (void)sm.create(make_create("/v1/b"));
  (void)sm.create(make_create("/v2/c"));
  auto l = sm.list("/v1/", t0);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].path, "/v1/a");
}

TEST(state_machine, apply_dispatches_every_command) {
  state_machine sm;
  EXPECT_TRUE(sm.apply(command{make_create("/s", "text/plain", "x")}).created);
  EXPECT_TRUE(sm.apply(command{make_append("/s", "y")}).appended);
  EXPECT_EQ(sm.apply(command{touch_command{"/s", t0}}).code, errc::ok);
  EXPECT_EQ(sm.apply(command{expire_command{"/s", t0}}).code, errc::ok);
  EXPECT_EQ(sm.apply(command{delete_command{"/s", t0}}).code, errc::ok);
  EXPECT_EQ(sm.size(), 0u);
}

TEST(content_type, normalizes_media_type) {
  EXPECT_EQ(normalize_content_type(" Application/JSON ; charset=utf-8"), "application/json");
  EXPECT_EQ(normalize_content_type(""), "");
}

}  // namespace
}  // namespace weir::streams

namespace weir::streams {
namespace {

TEST(state_machine, soft_deleted_stream_rejects_every_command) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  create_command f = make_create("/f");
  f.fork = resolve_fork(sm, "/src", std::nullopt);
  (void)sm.create(f);
  ASSERT_EQ(sm.remove(delete_command{"/src", t0}).code, errc::ok);
  EXPECT_EQ(sm.append(make_append("/src", "x")).code, errc::gone);
  EXPECT_EQ(sm.touch(touch_command{"/src", t0}).code, errc::gone);
  EXPECT_EQ(sm.expire(expire_command{"/src", t0}).code, errc::gone);
  EXPECT_EQ(sm.head("/src", t0).code, errc::gone);
  EXPECT_TRUE(sm.list("/", t0).size() == 1u);  // only the fork is listed
}

// "/src" ("abc", expires after 1 s) and its fork "/f" (which outlives it).
void create_expiring_source_and_fork(state_machine& sm) {
  create_command src = make_create("/src", "text/plain", "abc");
  src.expiry.ttl_seconds = 1;
  (void)sm.create(src);
  create_command f = make_create("/f");
  f.expiry.ttl_seconds = 3600;
  f.fork = resolve_fork(sm, "/src", std::nullopt);
  (void)sm.create(f);
}

TEST(state_machine, expired_source_with_forks_becomes_soft_deleted) {
  state_machine sm;
  create_expiring_source_and_fork(sm);
  outcome o = sm.expire(expire_command{"/src", t0 + 1000});
  EXPECT_EQ(o.code, errc::gone);
  EXPECT_EQ(o.removed, std::vector<std::string>{"/src"});
  EXPECT_EQ(read_all(sm, "/f"), "abc");  // the fork still reads its inherited data
  outcome del = sm.remove(delete_command{"/f", t0 + 1000});
  EXPECT_EQ(sources(del.release), std::vector<std::string>{"/src"});
  EXPECT_EQ(sm.fork_release(fork_release_command{"/src"}).removed, std::vector<std::string>{"/src"});
  EXPECT_EQ(sm.size(), 0u);
}

TEST(state_machine, position_of_agrees_with_head) {
  state_machine sm;
  create_expiring_source_and_fork(sm);
  (void)sm.create(make_create("/c", "text/plain", "xy"));
  append_command close = make_append("/c", "z");
  close.close = true;
  (void)sm.append(close);
  auto agree = [&](std::string_view path, std::int64_t now) {
    read_result h = sm.head(path, now);
    state_machine::position p = sm.position_of(path, now);
    EXPECT_EQ(p.exists, h.code == errc::ok) << path << " at " << now;
    if (h.code != errc::ok) return;
    EXPECT_EQ(p.tail, h.meta->tail) << path;
    EXPECT_EQ(p.closed, h.meta->closed) << path;
  };
  for (std::int64_t now : {t0, t0 + 5000}) {  // before and after /src expires (soft-deleted: a fork holds it)
    for (std::string_view path : {"/src", "/f", "/c", "/absent"}) agree(path, now);
  }
  (void)sm.expire(expire_command{"/src", t0 + 5000});
  for (std::string_view path : {"/src", "/f", "/c"}) agree(path, t0 + 5000);
  EXPECT_TRUE(sm.position_of("/c", t0).closed);
  EXPECT_EQ(sm.position_of("/f", t0).tail.value(), 3u);
}

TEST(state_machine, fork_release_of_unknown_source_is_harmless) {
  state_machine sm;
  outcome o = sm.fork_release(fork_release_command{"/nothing"});
  EXPECT_EQ(o.code, errc::ok);
  EXPECT_TRUE(o.removed.empty());
}

TEST(state_machine, create_on_existing_fork_gives_back_an_unused_reference) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  create_command f = make_create("/f");
  f.fork = resolve_fork(sm, "/src", std::nullopt);
  (void)sm.create(f);
  create_command again = make_create("/f");
  again.fork = resolve_fork(sm, "/src", std::nullopt);  // a second reference, raced
  outcome o = sm.create(again);
  EXPECT_EQ(o.code, errc::ok);
  EXPECT_FALSE(o.created);
  EXPECT_EQ(sources(o.release), std::vector<std::string>{"/src"});
}

TEST(state_machine, json_fork_must_be_at_a_message_boundary) {
  state_machine sm;
  create_command c = make_create("/j", "application/json");
  c.initial = bytes("1,2,", 2);
  (void)sm.create(c);
  (void)resolve_fork(sm, "/j", 1, 0, errc::bad_fork_offset);
  (void)resolve_fork(sm, "/j", 0, 3, errc::bad_sub_offset);  // only 2 messages in the record
  fork_spec ok = resolve_fork(sm, "/j", 0, 2);
  ASSERT_TRUE(ok.resolved.retained);
}

TEST(state_machine, close_only_with_producer) {
  state_machine sm;
  (void)sm.create(make_create("/p"));
  append_command close;
  close.path = "/p";
  close.close = true;
  close.producer = producer_ref{"w", 0, 0};
  close.now_ms = t0;
  outcome o = sm.append(close);
  EXPECT_EQ(o.code, errc::ok);
  EXPECT_TRUE(o.closed_now);
  EXPECT_FALSE(o.appended);
  outcome dup = sm.append(close);
  EXPECT_TRUE(dup.duplicate);
  close.producer->seq = 1;
  EXPECT_EQ(sm.append(close).code, errc::closed);
}

// PROTOCOL.md 1: a new stream SHOULD NOT be created at a deleted stream's URL. With a hold, the path
// answers path_held until it ends; a delete without one frees the path at once (the default).
TEST(state_machine, a_held_path_cannot_be_recreated_until_its_hold_ends) {
  state_machine sm;
  ASSERT_TRUE(sm.create(make_create("/held")).created);
  ASSERT_TRUE(sm.create(make_create("/free")).created);
  ASSERT_EQ(sm.remove(delete_command{"/held", t0, 30'000}).code, errc::ok);
  ASSERT_EQ(sm.remove(delete_command{"/free", t0}).code, errc::ok);
  EXPECT_EQ(sm.held_paths(), 1u);

  create_command c = make_create("/held");
  c.now_ms = t0 + 29'999;
  outcome o = sm.create(c);
  EXPECT_EQ(o.code, errc::path_held);
  EXPECT_FALSE(o.mutated);
  EXPECT_EQ(sm.head("/held", c.now_ms).code, errc::not_found);
  EXPECT_TRUE(sm.create(make_create("/free")).created);

  c.now_ms = t0 + 30'000;
  EXPECT_TRUE(sm.create(c).created);
  EXPECT_EQ(sm.held_paths(), 0u);
}

TEST(state_machine, a_held_fork_create_gives_back_its_source_reference) {
  state_machine sm;
  ASSERT_TRUE(sm.create(make_create("/f")).created);
  ASSERT_EQ(sm.remove(delete_command{"/f", t0, 1'000}).code, errc::ok);
  create_command c = make_create("/f");
  c.fork = fork_spec{};
  c.fork->source = "/src";
  c.fork->resolved.retained = true;
  outcome o = sm.create(c);
  EXPECT_EQ(o.code, errc::path_held);
  ASSERT_EQ(o.release.size(), 1u);
  EXPECT_EQ(o.release[0].source, "/src");
}

append_command producer_append(std::string id, std::uint64_t epoch, std::uint64_t seq, std::int64_t now) {
  append_command c = make_append("/p", "x");
  c.producer = producer_ref{std::move(id), epoch, seq};
  c.now_ms = now;
  return c;
}

// PROTOCOL.md 5.2.1 "Producer State Cleanup": a producer idle for producer_idle_ms is forgotten and
// starts again as a new one (seq 0); one used within it keeps its sequence.
TEST(state_machine, an_idle_producer_is_forgotten_after_its_ttl) {
  state_machine sm;
  ASSERT_TRUE(sm.create(make_create("/p")).created);
  ASSERT_EQ(sm.append(producer_append("w", 0, 0, t0)).code, errc::ok);
  ASSERT_EQ(sm.append(producer_append("w", 0, 1, t0 + 1000)).code, errc::ok);
  // Within the TTL: seq 0 again is a duplicate.
  EXPECT_TRUE(sm.append(producer_append("w", 0, 0, t0 + producer_idle_ms)).duplicate);
  // Idle past the TTL (counted from its last accepted append): seq 2 is a gap for a new producer...
  outcome gap = sm.append(producer_append("w", 0, 2, t0 + 1000 + producer_idle_ms));
  EXPECT_EQ(gap.code, errc::seq_gap);
  EXPECT_EQ(gap.expected_seq, 0u);
  // ...and seq 0 is accepted as new data, not a duplicate.
  outcome fresh = sm.append(producer_append("w", 0, 0, t0 + 1000 + producer_idle_ms));
  EXPECT_EQ(fresh.code, errc::ok);
  EXPECT_FALSE(fresh.duplicate);
  EXPECT_TRUE(fresh.appended);
}

// A stream keeps at most max_producers_per_stream producers: a new one beyond that forgets the least
// recently used, and the others keep deduplicating.
TEST(state_machine, producers_per_stream_are_capped_least_recently_used_first) {
  state_machine sm;
  ASSERT_TRUE(sm.create(make_create("/p")).created);
  for (std::size_t i = 0; i < max_producers_per_stream; ++i) {
    ASSERT_EQ(
        sm.append(producer_append("w" + std::to_string(i), 0, 0, t0 + static_cast<std::int64_t>(i))).code,
        errc::ok);
  }
  // w0 is the least recently used: a new producer takes its place.
  ASSERT_EQ(sm.append(producer_append("new", 0, 0, t0 + 1'000'000)).code, errc::ok);
  EXPECT_FALSE(sm.append(producer_append("w0", 0, 0, t0 + 1'000'001)).duplicate) << "w0 was kept";
  // w0's return evicted w1 (now the oldest); w2 is still known.
  EXPECT_TRUE(sm.append(producer_append("w2", 0, 0, t0 + 1'000'002)).duplicate);
  EXPECT_FALSE(sm.append(producer_append("w1", 0, 0, t0 + 1'000'003)).duplicate);
}

}  // namespace
}  // namespace weir::streams

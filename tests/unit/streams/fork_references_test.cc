// Fork references in a cluster (docs/replication.md, "Forks"): a retain applied at a raft place
// (state_machine::set_entry_place) takes a reference named by that place; a release naming it is
// idempotent; a tombstone of an origin refuses a late create of its fork; parts carry references and
// tombstones; older blobs and commands keep their counts (anonymous references).
#include <gtest/gtest.h>

#include "streams/command_codec.h"
#include "streams/state_machine.h"
#include "streams/wire.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

bool in_a(std::string_view p) {
  return p.starts_with("/a/");
}
bool in_b(std::string_view p) {
  return p.starts_with("/b/");
}
bool any_location(const disk_location&) {
  return true;
}

std::uint32_t refs_of(const state_machine& sm, std::string_view path) {
  for (const auto& [p, n] : sm.ref_counts())
    if (p == path) return n;
  return 0;
}

// The retain of a fork at `fork` from `source` as a cluster applies it, at (group, index) of the source's
// group, then the fork's create (generation from its own place) carrying the origin.
fork_spec retain_at(state_machine& sm, std::uint32_t group, std::uint64_t index, const std::string& source,
                    const std::string& fork, std::int64_t now = t0) {
  sm.set_entry_place(group, index);
  fork_retain_command r;
  r.source = source;
  r.now_ms = now;
  r.fork = fork;
  outcome o = sm.fork_retain(r);
  EXPECT_EQ(o.code, errc::ok);
  fork_spec f;
  f.source = source;
  if (o.resolution) {
    f.resolved = *o.resolution;
    f.resolved.retained = true;
  }
  EXPECT_EQ(f.resolved.origin, (fork_origin{group, index}));
  return f;
}

outcome create_fork(state_machine& sm, std::uint32_t group, std::uint64_t index, const std::string& path,
                    const fork_spec& f) {
  sm.set_entry_place(group, index);
  create_command c = make_create(path, "");
  c.fork = f;
  return sm.create(c);
}

TEST(fork_references, a_release_by_origin_applied_twice_gives_back_one_reference) {
  state_machine sm;
  sm.set_entry_place(0, 1);
  ASSERT_EQ(sm.create(make_create("/a/src", "text/plain", "abc")).code, errc::ok);
  const fork_spec f1 = retain_at(sm, 0, 2, "/a/src", "/b/f1");
  const fork_spec f2 = retain_at(sm, 0, 3, "/a/src", "/b/f2");
  ASSERT_EQ(create_fork(sm, 1, 1, "/b/f1", f1).code, errc::ok);
  ASSERT_EQ(create_fork(sm, 1, 2, "/b/f2", f2).code, errc::ok);
  EXPECT_EQ(refs_of(sm, "/a/src"), 2u);
  sm.set_entry_place(0, 4);
  ASSERT_EQ(sm.remove(delete_command{"/a/src", t0}).code, errc::ok);  // soft-deleted: forks read it

  // The fork's delete names its reference.
  sm.set_entry_place(1, 3);
  outcome del = sm.remove(delete_command{"/b/f1", t0});
  ASSERT_EQ(del.release.size(), 1u);
  EXPECT_EQ(del.release[0].source, "/a/src");
  EXPECT_EQ(del.release[0].origin, (fork_origin{0, 2}));

  // Applied twice (a release proposed again after an unknown outcome): the second changes nothing.
  sm.set_entry_place(0, 5);
  EXPECT_TRUE(sm.fork_release(del.release[0]).mutated);
  EXPECT_EQ(refs_of(sm, "/a/src"), 1u);
  sm.set_entry_place(0, 6);
  outcome again = sm.fork_release(del.release[0]);
  EXPECT_FALSE(again.mutated);
  EXPECT_TRUE(again.removed.empty());
  EXPECT_EQ(refs_of(sm, "/a/src"), 1u);
  EXPECT_EQ(sm.read("/b/f2", std::nullopt, 1 << 16).code, errc::ok);

  // The other fork's release frees the source; once more, nothing (the source is gone).
  sm.set_entry_place(1, 4);
  outcome del2 = sm.remove(delete_command{"/b/f2", t0});
  ASSERT_EQ(del2.release.size(), 1u);
  sm.set_entry_place(0, 7);
  EXPECT_EQ(sm.fork_release(del2.release[0]).removed, std::vector<std::string>{"/a/src"});
  EXPECT_EQ(sm.size(), 0u);
  EXPECT_TRUE(sm.fork_release(del2.release[0]).removed.empty());
}

TEST(fork_references, a_release_naming_another_group_or_an_unknown_origin_changes_nothing) {
  state_machine sm;
  sm.set_entry_place(0, 1);
  ASSERT_EQ(sm.create(make_create("/a/src")).code, errc::ok);
  (void)retain_at(sm, 0, 2, "/a/src", "/b/f");
  EXPECT_FALSE(sm.fork_release({"/a/src", fork_origin{1, 2}}).mutated);
  EXPECT_FALSE(sm.fork_release({"/a/src", fork_origin{0, 3}}).mutated);
  EXPECT_TRUE(sm.holds_reference("/a/src", fork_origin{0, 2}));
  EXPECT_FALSE(sm.holds_reference("/a/src", fork_origin{0, 3}));
}

// A single node (no place set): a count, released without an origin, as before origins existed.
TEST(fork_references, without_a_place_references_are_anonymous_and_released_by_count) {
  state_machine sm;
  ASSERT_EQ(sm.create(make_create("/src", "text/plain", "abc")).code, errc::ok);
  fork_spec f = resolve_fork(sm, "/src", std::nullopt);
  EXPECT_FALSE(f.resolved.origin.has_value());
  create_command c = make_create("/fork", "");
  c.fork = f;
  ASSERT_EQ(sm.create(c).code, errc::ok);
  EXPECT_EQ(refs_of(sm, "/src"), 1u);
  EXPECT_TRUE(sm.references_by_origin([](std::string_view) { return true; }, t0).empty());
  outcome del = sm.remove(delete_command{"/fork", t0});
  ASSERT_EQ(del.release.size(), 1u);
  EXPECT_FALSE(del.release[0].origin.has_value());
  EXPECT_EQ(encode(command{del.release[0]})[0], 7);  // the single node's log keeps kind 7
  (void)sm.fork_release(del.release[0]);
  EXPECT_EQ(refs_of(sm, "/src"), 0u);
}

// A fork created without an origin (a create written before creates carried one) whose retain a cluster
// applied with one: its release, without an origin, still gives back one reference.
TEST(fork_references, a_release_without_an_origin_takes_an_anonymous_reference_then_one_by_origin) {
  state_machine sm;
  sm.set_entry_place(0, 1);
  ASSERT_EQ(sm.create(make_create("/a/src")).code, errc::ok);
  sm.set_entry_place(0, 2);
  fork_retain_command old_retain;  // kind 6: no fork named
  old_retain.source = "/a/src";
  old_retain.now_ms = t0;
  ASSERT_EQ(sm.fork_retain(old_retain).code, errc::ok);
  (void)retain_at(sm, 0, 3, "/a/src", "/b/new");
  EXPECT_EQ(refs_of(sm, "/a/src"), 2u);
  // Only references whose fork is known are for the sweep.
  auto held = sm.references_by_origin(in_a, t0);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].fork, "/b/new");
  (void)sm.fork_release({"/a/src", std::nullopt});
  EXPECT_FALSE(sm.holds_reference("/a/src", fork_origin{0, 2}));  // the one with no fork named went
  EXPECT_TRUE(sm.holds_reference("/a/src", fork_origin{0, 3}));
}

TEST(fork_references, references_by_origin_are_filtered_by_source_and_age) {
  state_machine sm;
  sm.set_entry_place(0, 1);
  ASSERT_EQ(sm.create(make_create("/a/src")).code, errc::ok);
  sm.set_entry_place(1, 1);
  ASSERT_EQ(sm.create(make_create("/b/src")).code, errc::ok);
  (void)retain_at(sm, 0, 2, "/a/src", "/b/f1", t0);
  (void)retain_at(sm, 0, 3, "/a/src", "/b/f2", t0 + 100);
  (void)retain_at(sm, 1, 2, "/b/src", "/a/f3", t0);
  auto old = sm.references_by_origin(in_a, t0 + 50);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].source, "/a/src");
  EXPECT_EQ(old[0].origin, (fork_origin{0, 2}));
  EXPECT_EQ(old[0].fork, "/b/f1");
  EXPECT_EQ(old[0].since_ms, t0);
  EXPECT_EQ(sm.references_by_origin(in_a, t0 + 100).size(), 2u);
  EXPECT_EQ(sm.references_by_origin(in_b, t0 + 100).size(), 1u);
}

TEST(fork_references, a_tombstone_refuses_a_late_create_and_keeps_a_fork_that_exists) {
  state_machine sm;
  sm.set_entry_place(0, 1);
  ASSERT_EQ(sm.create(make_create("/a/src", "text/plain", "abc")).code, errc::ok);
  const fork_spec lost = retain_at(sm, 0, 2, "/a/src", "/b/lost");
  const fork_spec made = retain_at(sm, 0, 3, "/a/src", "/b/made");
  ASSERT_EQ(create_fork(sm, 1, 1, "/b/made", made).code, errc::ok);

  // The fork exists: the tombstone records nothing.
  sm.set_entry_place(1, 2);
  outcome kept = sm.fork_tombstone({"/b/made", fork_origin{0, 3}, 1, t0});
  EXPECT_TRUE(kept.fork_exists);
  EXPECT_EQ(sm.tombstones(), 0u);

  // No fork with that origin: recorded dead; the create still in some log is refused when it commits,
  // and gives its reference back (by origin, so harmless after the sweep's own release).
  sm.set_entry_place(1, 3);
  outcome dead = sm.fork_tombstone({"/b/lost", fork_origin{0, 2}, 1, t0});
  EXPECT_FALSE(dead.fork_exists);
  EXPECT_TRUE(dead.mutated);
  EXPECT_EQ(sm.tombstones(), 1u);
  outcome late = create_fork(sm, 1, 4, "/b/lost", lost);
  EXPECT_EQ(late.code, errc::source_gone);
  EXPECT_FALSE(late.created);
  ASSERT_EQ(late.release.size(), 1u);
  EXPECT_EQ(late.release[0].origin, (fork_origin{0, 2}));
  EXPECT_EQ(sm.read("/b/lost", std::nullopt, 1 << 16).code, errc::not_found);
  EXPECT_FALSE(sm.fork_exists("/b/lost", fork_origin{0, 2}));

  // The path itself is free: a fork of another origin (a client's new attempt) is created.
  const fork_spec retry = retain_at(sm, 0, 4, "/a/src", "/b/lost");
  EXPECT_EQ(create_fork(sm, 1, 5, "/b/lost", retry).code, errc::ok);
  EXPECT_TRUE(sm.fork_exists("/b/lost", fork_origin{0, 4}));
}

TEST(fork_references, tombstones_are_forgotten_after_the_horizon_by_a_tombstone_of_their_group) {
  state_machine sm;
  ASSERT_EQ(sm.fork_tombstone({"/b/x", fork_origin{0, 2}, 1, t0}).code, errc::ok);
  ASSERT_EQ(sm.fork_tombstone({"/c/y", fork_origin{0, 3}, 2, t0}).code, errc::ok);
  EXPECT_EQ(sm.tombstones(), 2u);
  // Within the horizon: both stay.
  (void)sm.fork_tombstone({"/b/z", fork_origin{0, 4}, 1, t0 + fork_tombstone_horizon_ms - 1});
  EXPECT_EQ(sm.tombstones(), 3u);
  // Group 1's next tombstone past the horizon forgets group 1's old one, not group 2's.
  (void)sm.fork_tombstone({"/b/w", fork_origin{0, 5}, 1, t0 + fork_tombstone_horizon_ms});
  EXPECT_EQ(sm.tombstones(), 3u);
  sm.set_entry_place(0, 1);
  ASSERT_EQ(sm.create(make_create("/a/src", "text/plain", "abc")).code, errc::ok);
  create_command c = make_create("/b/x", "");
  c.fork = fork_spec{};
  c.fork->source = "/a/src";
  c.fork->resolved.origin = fork_origin{0, 2};
  sm.set_entry_place(1, 9);
  EXPECT_EQ(sm.create(c).code, errc::ok);  // forgotten: no longer refused
  c.path = "/c/y";
  c.fork->resolved.origin = fork_origin{0, 3};
  EXPECT_EQ(sm.create(c).code, errc::source_gone);
}

TEST(fork_references, a_part_carries_its_references_and_tombstones) {
  state_machine x;
  x.set_entry_place(0, 1);
  ASSERT_EQ(x.create(make_create("/a/src", "text/plain", "abc")).code, errc::ok);
  (void)x.fork_retain(fork_retain_command{"/a/src", std::nullopt, 0, "", t0});  // anonymous (no place)
  (void)retain_at(x, 0, 2, "/a/src", "/b/f1", t0 + 5);
  (void)retain_at(x, 0, 3, "/a/src", "/b/f2", t0 + 6);
  x.set_entry_place(1, 1);
  (void)x.fork_tombstone({"/b/f1", fork_origin{0, 2}, 1, t0 + 7});
  (void)x.fork_tombstone({"/a/other", fork_origin{0, 9}, 0, t0 + 8});  // of part A

  auto a = x.snapshot_part(in_a, any_location);
  auto b = x.snapshot_part(in_b, any_location);
  ASSERT_TRUE(a.has_value() && b.has_value());
  state_machine y;
  ASSERT_TRUE(y.restore_part({a->data(), a->size()}, in_a).has_value());
  ASSERT_TRUE(y.restore_part({b->data(), b->size()}, in_b).has_value());
  EXPECT_EQ(y.snapshot_part(in_a, any_location).value(), *a);
  EXPECT_EQ(y.snapshot_part(in_b, any_location).value(), *b);
  EXPECT_EQ(refs_of(y, "/a/src"), 3u);
  EXPECT_TRUE(y.holds_reference("/a/src", fork_origin{0, 2}));
  auto held = y.references_by_origin(in_a, t0 + 5);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].fork, "/b/f1");
  EXPECT_EQ(y.tombstones(), 2u);
  // B's tombstone refuses a late create on y too.
  create_command c = make_create("/b/f1", "");
  c.fork = fork_spec{};
  c.fork->source = "/a/src";
  c.fork->resolved.origin = fork_origin{0, 2};
  EXPECT_EQ(y.create(c).code, errc::source_gone);

  // Restoring B's part again from a blob without tombstones drops B's, not A's.
  state_machine empty;
  auto none = empty.snapshot_part(in_b, any_location);
  ASSERT_TRUE(y.restore_part({none->data(), none->size()}, in_b).has_value());
  EXPECT_EQ(y.tombstones(), 1u);

  // The whole-machine blob (a single node's) keeps one count.
  state_machine z;
  ASSERT_TRUE(z.restore(x.snapshot()).has_value());
  EXPECT_EQ(refs_of(z, "/a/src"), 3u);
  EXPECT_FALSE(z.holds_reference("/a/src", fork_origin{0, 2}));
}

// A part blob of version 5 (before references had origins): its count becomes anonymous references,
// which only releases without an origin give back; a release by origin leaves them (a leak, never a
// source freed while a fork reads it).
TEST(fork_references, a_version_5_part_count_becomes_anonymous_references) {
  wire::writer w;
  w.raw("weirsnap");
  w.var(5);
  w.var(1);  // one stream
  w.str("/a/src");
  w.var(1ull << 40 | 1);  // generation
  w.str("text/plain");
  w.exp(expiry_config{});
  w.exp(expiry_config{});
  w.boolean(false);  // closed
  w.svar(t0);        // last access
  w.boolean(true);   // soft-deleted
  w.var(2);          // references
  w.u8(0);           // not a fork
  w.u8(0);           // closed_by
  w.u8(0);           // last_seq
  w.var(0);          // producers
  w.var(0);          // records
  w.var(0);          // held paths
  const std::string blob = w.take();
  state_machine sm;
  ASSERT_TRUE(sm.restore_part(std::as_bytes(std::span(blob.data(), blob.size())), in_a).has_value());
  EXPECT_EQ(refs_of(sm, "/a/src"), 2u);
  EXPECT_FALSE(sm.fork_release({"/a/src", fork_origin{0, 5}}).mutated);
  EXPECT_EQ(refs_of(sm, "/a/src"), 2u);
  (void)sm.fork_release({"/a/src", std::nullopt});
  EXPECT_EQ(refs_of(sm, "/a/src"), 1u);
  EXPECT_EQ(sm.fork_release({"/a/src", std::nullopt}).removed, std::vector<std::string>{"/a/src"});
}

}  // namespace
}  // namespace weir::streams

namespace weir::streams {
namespace {

using namespace testing;

// A JSON stream of three one-message records ("{}," each: 3 bytes), whose first two are "in objects"
// as one extent [0, 6): the index knows record starts 0 and 6, not 3.
void json_source(state_machine& sm) {
  create_command c = make_create("/j", "application/json");
  ASSERT_TRUE(sm.apply(c).created);
  for (int i = 0; i < 3; ++i) {
    append_command a = make_append("/j", "{},");
    a.body.messages = 1;
    ASSERT_TRUE(sm.apply(a).appended);
  }
  sm.set_cold_boundary(
      [](std::string_view stream, stream_offset point) -> std::optional<state_machine::cold_point> {
        if (stream != "/j" || point.value() >= 6) return std::nullopt;
        return state_machine::cold_point{point.value() == 0, stream_offset(6)};
      });
}

outcome retain(state_machine& sm, std::uint64_t offset, std::uint64_t sub_offset = 0,
               std::optional<carried_record> point_record = std::nullopt, bool record_decides = false,
               const std::string& source = "/j") {
  fork_retain_command r;
  r.source = source;
  r.offset = stream_offset(offset);
  r.sub_offset = sub_offset;
  r.now_ms = t0;
  r.point_record = point_record;
  r.record_decides = record_decides;
  return sm.fork_retain(r);
}

TEST(cold_fork_points,
     a_fork_point_in_cold_bytes_is_decided_by_the_index_whether_or_not_records_were_forgotten) {
  // Two replicas: one still holds the records of [0, 6), the other forgot them (its bytes are in objects).
  state_machine holds, forgot;
  json_source(holds);
  json_source(forgot);
  ASSERT_EQ(std::const_pointer_cast<memory_log>(forgot.log_of("/j"))->forget_before(stream_offset(6)), 6u);
  for (state_machine* sm : {&holds, &forgot}) {
    // 3 begins a record, but the index cannot tell: refused on both, although `holds` has the record.
    EXPECT_EQ(retain(*sm, 3).code, errc::bad_fork_offset);
    EXPECT_EQ(retain(*sm, 0).code, errc::ok);
    EXPECT_EQ(retain(*sm, 6).code, errc::ok);  // the cold end: the records decide, and agree
    EXPECT_EQ(retain(*sm, 7).code, errc::bad_fork_offset);
    // A sub-offset needs the record's extent: refused in cold bytes, taken after them.
    EXPECT_EQ(retain(*sm, 0, 1).code, errc::bad_sub_offset);
    EXPECT_EQ(retain(*sm, 6, 1).code, errc::ok);
  }
  // With the record an object's record table lists at the point (carried by the retain), both take it.
  for (state_machine* sm : {&holds, &forgot}) {
    outcome at3 = retain(*sm, 3, 0, carried_record{stream_offset(6), 1});
    EXPECT_EQ(at3.code, errc::ok);
    EXPECT_FALSE(at3.sub_record.has_value());
    // A sub-offset within it: the record, its bytes to be read from the bucket.
    outcome cut = retain(*sm, 3, 1, carried_record{stream_offset(6), 1});
    ASSERT_EQ(cut.code, errc::ok);
    ASSERT_TRUE(cut.sub_record.has_value());
    EXPECT_EQ(cut.sub_record->end, 6u);
    EXPECT_EQ(cut.sub_record->messages, 1u);
    ASSERT_TRUE(cut.sub_record_in_objects.has_value());
    EXPECT_EQ(cut.sub_record_in_objects->stream, "/j");
    EXPECT_EQ(cut.sub_record_in_objects->from, stream_offset(3));
    EXPECT_EQ(cut.sub_record_in_objects->until, stream_offset(6));
    // More messages than the record has, or a record that does not end inside the bytes in objects:
    // refused on every replica, whatever it holds.
    EXPECT_EQ(retain(*sm, 3, 2, carried_record{stream_offset(6), 1}).code, errc::bad_sub_offset);
    EXPECT_EQ(retain(*sm, 3, 0, carried_record{stream_offset(9), 1}).code, errc::bad_fork_offset);
    EXPECT_EQ(retain(*sm, 3, 1, carried_record{stream_offset(3), 1}).code, errc::bad_fork_offset);
    // A record past the bytes in objects is the records' business: the carried one is ignored.
    EXPECT_EQ(retain(*sm, 7, 0, carried_record{stream_offset(9), 1}).code, errc::bad_fork_offset);
  }
  // Without the rule, the replica holding the records would take the fork at 3 and the other would not.
  holds.set_cold_boundary({});
  forgot.set_cold_boundary({});
  EXPECT_EQ(retain(holds, 3).code, errc::ok);
  EXPECT_EQ(retain(forgot, 3).code, errc::bad_fork_offset);
}

TEST(cold_fork_points, a_retain_whose_record_decides_asks_neither_the_index_nor_the_records) {
  // A fork of /j at 9 (its tail), whose own bytes begin there: points before 9 are /j's bytes, which
  // (record_decides) apply in another log. Three replicas of that fork: one holds /j's records, one forgot
  // [0, 6) and knows it from its index, one forgot them with no index answer at all.
  state_machine holds, indexed, bare;
  for (state_machine* sm : {&holds, &indexed, &bare}) {
    json_source(*sm);
    outcome r = retain(*sm, 9);
    ASSERT_EQ(r.code, errc::ok);
    create_command c = make_create("/f", "application/json");
    c.fork = fork_spec{"/j", stream_offset(9), 0, *r.resolution};
    c.fork->resolved.retained = true;
    ASSERT_TRUE(sm->apply(c).created);
  }
  ASSERT_EQ(std::const_pointer_cast<memory_log>(indexed.log_of("/j"))->forget_before(stream_offset(6)), 6u);
  ASSERT_EQ(std::const_pointer_cast<memory_log>(bare.log_of("/j"))->forget_before(stream_offset(6)), 6u);
  bare.set_cold_boundary({});
  for (state_machine* sm : {&holds, &indexed, &bare}) {
    // Without a carried record only the holder's own start is a record's start, whatever the replica
    // holds: 3 and 6 begin records, but nothing says so.
    EXPECT_EQ(retain(*sm, 0, 0, std::nullopt, true, "/f").code, errc::ok);
    EXPECT_EQ(retain(*sm, 3, 0, std::nullopt, true, "/f").code, errc::bad_fork_offset);
    EXPECT_EQ(retain(*sm, 6, 0, std::nullopt, true, "/f").code, errc::bad_fork_offset);
    EXPECT_EQ(retain(*sm, 0, 1, std::nullopt, true, "/f").code, errc::bad_sub_offset);
    // With it, every replica takes the point, in forgotten bytes or not.
    EXPECT_EQ(retain(*sm, 3, 0, carried_record{stream_offset(6), 1}, true, "/f").code, errc::ok);
    EXPECT_EQ(retain(*sm, 6, 0, carried_record{stream_offset(9), 1}, true, "/f").code, errc::ok);
    EXPECT_EQ(retain(*sm, 6, 2, carried_record{stream_offset(9), 1}, true, "/f").code, errc::bad_sub_offset);
    // The fork's tail and its own bytes are decided as always.
    EXPECT_EQ(retain(*sm, 9, 0, std::nullopt, true, "/f").code, errc::ok);
    EXPECT_EQ(retain(*sm, 10, 0, std::nullopt, true, "/f").code, errc::bad_fork_offset);
  }
  // The record a sub-offset cuts: the replica's own copy while it keeps it, else to be read from the
  // bucket.
  outcome kept = retain(holds, 3, 1, carried_record{stream_offset(6), 1}, true, "/f");
  ASSERT_EQ(kept.code, errc::ok);
  ASSERT_TRUE(kept.sub_record.has_value());
  EXPECT_EQ(kept.sub_record->end, 6u);
  EXPECT_FALSE(kept.sub_record_in_objects.has_value());
  for (state_machine* sm : {&indexed, &bare}) {
    outcome cut = retain(*sm, 3, 1, carried_record{stream_offset(6), 1}, true, "/f");
    ASSERT_EQ(cut.code, errc::ok);
    ASSERT_TRUE(cut.sub_record_in_objects.has_value());
    EXPECT_EQ(cut.sub_record_in_objects->stream, "/j");
    EXPECT_EQ(cut.sub_record_in_objects->from, stream_offset(3));
    EXPECT_EQ(cut.sub_record_in_objects->until, stream_offset(6));
  }
  // Without record_decides, the same retain depends on what each replica holds.
  holds.set_cold_boundary({});
  EXPECT_EQ(retain(holds, 3, 0, std::nullopt, false, "/f").code, errc::ok);
  EXPECT_EQ(retain(bare, 3, 0, std::nullopt, false, "/f").code, errc::bad_fork_offset);
}

}  // namespace
}  // namespace weir::streams

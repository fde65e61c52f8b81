#include "subscriptions/subscription_log.h"

#include <gtest/gtest.h>

#include <atomic>

#include "storage/mem_env.h"
#include "subscriptions/subscription_manager.h"
#include "unit/subscriptions/fakes.h"

namespace weir::subscriptions {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

persisted_subscription sample(std::string id, int links) {
  persisted_subscription p;
  p.root = "/v1/stream/";
  p.origin = "http://127.0.0.1:4437";
  p.id = std::move(id);
  p.config.type = delivery_type::webhook;
  p.config.pattern = "events/*";
  p.config.webhook_url = "https://worker.example/hook";
  p.config.description = "with \"quotes\" and \n newline";
  p.created_at_wall_ms = 1'700'000'000'123;
  for (int i = 0; i < links; ++i) {
    stream_link l;
    l.glob_link = true;
    l.explicit_link = i % 2 == 0;
    l.acked_offset = testing::fake_host::offset(i);
    p.links["events/" + std::to_string(i)] = l;
  }
  p.generation = 12;
  p.failed = true;
  p.failed_attempts = 3;
  p.retry_at_wall_ms = 1'700'000'004'000;
  p.paused = true;
  return p;
}

void expect_same(const persisted_subscription& a, const persisted_subscription& b) {
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.origin, b.origin);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.config.hash(), b.config.hash());
  EXPECT_EQ(a.created_at_wall_ms, b.created_at_wall_ms);
  EXPECT_EQ(a.generation, b.generation);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.failed_attempts, b.failed_attempts);
  EXPECT_EQ(a.retry_at_wall_ms, b.retry_at_wall_ms);
  EXPECT_EQ(a.paused, b.paused);
  ASSERT_EQ(a.links.size(), b.links.size());
  for (const auto& [path, l] : a.links) {
    ASSERT_TRUE(b.links.count(path)) << path;
    EXPECT_EQ(l.acked_offset, b.links.at(path).acked_offset);
    EXPECT_EQ(l.explicit_link, b.links.at(path).explicit_link);
    EXPECT_EQ(l.glob_link, b.links.at(path).glob_link);
  }
}

TEST(subscription_log, image_round_trips) {
  std::string image = encode_image({sample("a", 3), sample("b", 0)});
  auto r = replay_log(bytes_of(image));
  ASSERT_TRUE(r.has_value()) << r.err().reason;
  EXPECT_EQ(r->valid_bytes, image.size());
  EXPECT_EQ(r->dropped_bytes, 0u);
  ASSERT_EQ(r->subs.size(), 2u);
  expect_same(r->subs[0], sample("a", 3));
  expect_same(r->subs[1], sample("b", 0));
}

TEST(subscription_log, changes_apply_in_order) {
  auto a = sample("a", 2);
  std::string log = encode_image({a});
  const std::string key = subscription_key(a);
  stream_link acked;
  acked.explicit_link = true;
  acked.acked_offset = testing::fake_host::offset(9);
  append_record(log, link_record(key, "events/0", acked));
  append_record(log, unlink_record(key, "events/1"));
  append_record(log, link_record(key, "events/new", stream_link{}));
  append_record(log, state_record(key, 13, false, 0, 0, false));
  auto b = sample("b", 1);
  append_record(log, sub_record(b));
  append_record(log, delete_record(subscription_key(b)));
  auto r = replay_log(bytes_of(log));
  ASSERT_TRUE(r.has_value()) << r.err().reason;
  ASSERT_EQ(r->subs.size(), 1u);
  const auto& s = r->subs[0];
  EXPECT_EQ(s.generation, 13u);
  EXPECT_FALSE(s.paused);
  ASSERT_EQ(s.links.size(), 2u);
  EXPECT_EQ(s.links.at("events/0").acked_offset, testing::fake_host::offset(9));
  EXPECT_FALSE(s.links.at("events/0").glob_link);
  EXPECT_EQ(s.links.at("events/new").acked_offset, "-1");
  EXPECT_FALSE(s.links.count("events/1"));
}

// A crash mid-write leaves a record cut anywhere: every prefix replays to the state before that record.
TEST(subscription_log, a_torn_tail_ends_the_log) {
  auto a = sample("a", 2);
  std::string log = encode_image({a});
  const std::size_t whole = log.size();
  stream_link l;
  l.acked_offset = testing::fake_host::offset(5);
  append_record(log, link_record(subscription_key(a), "events/late", l));
  for (std::size_t cut = whole; cut < log.size(); ++cut) {
    auto r = replay_log(bytes_of(log.substr(0, cut)));
    ASSERT_TRUE(r.has_value()) << "cut at " << cut << ": " << r.err().reason;
    EXPECT_EQ(r->valid_bytes, whole);
    EXPECT_EQ(r->dropped_bytes, cut - whole);
    ASSERT_EQ(r->subs.size(), 1u);
    EXPECT_FALSE(r->subs[0].links.count("events/late"));
  }
  std::string flipped = log;
  flipped.back() ^= 0x20;  // the payload's last byte: CRC mismatch
  auto r = replay_log(bytes_of(flipped));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->valid_bytes, whole);
  auto full = replay_log(bytes_of(log));
  ASSERT_TRUE(full.has_value());
  EXPECT_TRUE(full->subs[0].links.count("events/late"));
}

TEST(subscription_log, intact_records_that_make_no_sense_are_corruption) {
  std::string log;
  append_record(log, unlink_record("/v1/stream/nobody", "x"));
  EXPECT_FALSE(replay_log(bytes_of(log)).has_value());
  std::string junk;
  append_record(junk, "not json");
  EXPECT_FALSE(replay_log(bytes_of(junk)).has_value());
}

// An env that counts the bytes appended through it (the module's file interface), over mem_env.
class counting_env final : public storage::env {
 public:
  explicit counting_env(storage::env& inner) : inner_(inner) {}
  std::atomic<std::uint64_t> appended{0};

  result<std::unique_ptr<storage::writable_file>> open_writable(const std::string& path,
                                                                storage::open_mode mode) override {
    auto f = inner_.open_writable(path, mode);
    if (!f) return f.err();
    return std::unique_ptr<storage::writable_file>(new counting_file(std::move(*f), appended));
  }
  result<std::unique_ptr<storage::random_access_file>> open_readable(const std::string& path) override {
    return inner_.open_readable(path);
  }
  result<std::vector<std::string>> list_dir(const std::string& dir) override { return inner_.list_dir(dir); }
  status create_dirs(const std::string& dir) override { return inner_.create_dirs(dir); }
  status remove_file(const std::string& path) override { return inner_.remove_file(path); }
  status rename_file(const std::string& from, const std::string& to) override {
    return inner_.rename_file(from, to);
  }
  status sync_dir(const std::string& dir) override { return inner_.sync_dir(dir); }
  bool file_exists(const std::string& path) override { return inner_.file_exists(path); }

 private:
  class counting_file final : public storage::writable_file {
   public:
    counting_file(std::unique_ptr<storage::writable_file> f, std::atomic<std::uint64_t>& n)
        : f_(std::move(f)), n_(n) {}
    status append(std::span<const std::byte> data) override {
      n_ += data.size();
      return f_->append(data);
    }
    status sync() override { return f_->sync(); }
    status truncate(std::uint64_t size) override { return f_->truncate(size); }
    std::uint64_t size() const override { return f_->size(); }

   private:
    std::unique_ptr<storage::writable_file> f_;
    std::atomic<std::uint64_t>& n_;
  };
  storage::env& inner_;
};

const std::string log_path = "/data/subscriptions.log";

// Recovery after a torn tail: the journal cuts it off at open, and new records follow whole ones.
TEST(subscription_journal, recovers_after_a_torn_tail) {
  storage::mem_env env;
  ASSERT_TRUE(env.create_dirs("/data"));
  auto a = sample("a", 2);
  {
    std::vector<persisted_subscription> restored;
    auto j = subscription_journal::open(env, log_path, restored);
    ASSERT_TRUE(j.has_value()) << j.err().reason;
    EXPECT_TRUE(restored.empty());
    (*j)->submit(journal_batch{true, encode_image({a})});
    std::string late;
    append_record(late, link_record(subscription_key(a), "events/late", stream_link{}));
    (*j)->submit(journal_batch{false, late});
    (*j)->close();
  }
  // The crash: half of one more record at the end.
  auto bytes = *env.contents(log_path);
  std::string torn;
  append_record(torn, link_record(subscription_key(a), "events/torn", stream_link{}));
  for (std::size_t i = 0; i < torn.size() / 2; ++i) bytes.push_back(static_cast<std::byte>(torn[i]));
  const std::size_t intact = env.contents(log_path)->size();
  env.set_contents(log_path, bytes);
  {
    std::vector<persisted_subscription> restored;
    auto j = subscription_journal::open(env, log_path, restored);
    ASSERT_TRUE(j.has_value()) << j.err().reason;
    ASSERT_EQ(restored.size(), 1u);
    EXPECT_TRUE(restored[0].links.count("events/late"));
    EXPECT_FALSE(restored[0].links.count("events/torn"));
    EXPECT_EQ(env.contents(log_path)->size(), intact);  // cut back to whole records
    std::string more;
    append_record(more, link_record(subscription_key(a), "events/after", stream_link{}));
    (*j)->submit(journal_batch{false, more});
    (*j)->flush();
  }
  auto r = replay_log(*env.contents(log_path));
  ASSERT_TRUE(r.has_value()) << r.err().reason;
  EXPECT_EQ(r->dropped_bytes, 0u);
  EXPECT_TRUE(r->subs.at(0).links.count("events/after"));
}

// With a wildcard subscription, every stream creation writes O(1) bytes (one link record, plus its share
// of the amortised compactions), not the whole state: the old snapshot design wrote every existing link
// again (about 80 bytes each) for each creation.
TEST(subscription_journal, stream_creations_write_constant_bytes_each) {
  storage::mem_env mem;
  ASSERT_TRUE(mem.create_dirs("/data"));
  counting_env env(mem);
  std::vector<persisted_subscription> restored;
  auto journal = subscription_journal::open(env, log_path, restored);
  ASSERT_TRUE(journal.has_value());
  subscription_journal& j = **journal;

  manual_clock clock;
  testing::fake_scheduler sched(clock);
  testing::fake_host host;
  testing::fake_transport transport;
  manager_options opts{true, 30'000, 10'000, 3'600'000};
  opts.persist = [&j](journal_batch b) { j.submit(std::move(b)); };
  opts.compact_min_bytes = 64 * 1024;  // compactions happen within the test
  subscription_manager m(sched, host, transport, clock, *signing_key::generate(),
                         token_signer(token_signer::random_secret()), opts);
  std::optional<control_response> out;
  m.handle(
      control_request{http::method::put,
                      R"({"type":"webhook","pattern":"events/*","webhook":{"url":"https://w.example/h"}})",
                      {},
                      "/v1/stream/",
                      "subscriptions/all",
                      "http://127.0.0.1:4437"},
      [&](control_response r) { out = std::move(r); });
  sched.drain();
  ASSERT_EQ(out->status, 201);

  auto create = [&](int i) {
    // An empty stream: linked, nothing pending, so no webhook; each creation gets its own write.
    m.on_stream_created(host.put("/v1/stream/events/stream-" + std::to_string(i), 0));
    sched.advance(25);
  };
  constexpr int first = 1'000;
  constexpr int total = 5'000;
  for (int i = 0; i < first; ++i) create(i);
  j.flush();
  const std::uint64_t early = env.appended;
  for (int i = first; i < total; ++i) create(i);
  j.flush();
  const std::uint64_t late = env.appended - early;
  const double per_early = static_cast<double>(early) / first;
  const double per_late = static_cast<double>(late) / (total - first);
  // One creation appends one link record; a compaction is written once the appends since the last one
  // exceed the last image, so it adds at most two more records' worth per creation (the image doubles).
  std::string one;
  append_record(one, link_record("/v1/stream/all", "events/stream-1234", stream_link{}));
  const double bound = 3.5 * static_cast<double>(one.size());
  EXPECT_LT(per_early, bound) << early;
  EXPECT_LT(per_late, bound) << late;
  // The log stays proportional to the live state: at most the last image plus as much again.
  EXPECT_LT(mem.contents(log_path)->size(), 3u * one.size() * total + opts.compact_min_bytes);
  m.shutdown();
  j.close();

  std::vector<persisted_subscription> back;
  auto reopened = subscription_journal::open(mem, log_path, back);
  ASSERT_TRUE(reopened.has_value()) << reopened.err().reason;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].links.size(), static_cast<std::size_t>(total));
}

}  // namespace
}  // namespace weir::subscriptions

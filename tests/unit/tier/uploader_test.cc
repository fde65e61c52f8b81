// uploader: packing several streams into one object, the age limit for a slow stream, cutting a long
// range, retries with the same key and bytes under every fault of the fake store (seeded), reports in
// sequence order, and stop(). Deterministic: the simulation's scheduler and clock, the in-memory store.
#include "tier/uploader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/sim/sim_scheduler.h"
#include "tier/mem_object_store.h"

namespace weir::tier {
namespace {

using namespace std::chrono_literals;
using streams::stream_offset;

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::string text_of(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// A stream's bytes: "<name>:<offset>;" repeated, so that any range names where it came from.
std::string stream_bytes(const std::string& name, std::size_t n) {
  std::string s;
  while (s.size() < n) s += name + ":" + std::to_string(s.size()) + ";";
  s.resize(n);
  return s;
}

struct harness {
  explicit harness(uploader_options o, std::uint64_t seed = 1) : sched(seed), ex(sched) {
    up = std::make_unique<uploader>(
        ex, o,
        [this](std::string key, shared_object_bytes bytes, uploader::put_done done) {
          ++puts;
          auto& seen = sent[key];
          if (!seen.empty()) {
            EXPECT_EQ(seen, *bytes) << "a key sent again with other bytes: " << key;
          }
          seen = *bytes;
          if (hold) {
            held.emplace_back(std::move(key), *bytes, std::move(done));
            return;
          }
          // The store answers on another thread in production: here, a later task of the executor.
          auto r = store.put(key, *bytes);
          ex.post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
        },
        [this](const uploaded_object& u) { reports.push_back(u); });
  }

  void run_for(std::chrono::milliseconds d) { sched.run_until(sched.now_ms() + d.count()); }

  // Reads one reported object back through the store and returns stream -> bytes, in range order.
  std::map<std::string, std::string> read_back(const uploaded_object& u) {
    auto reader = object_reader::open(store, u.key, u.size);
    EXPECT_TRUE(reader) << reader.err().describe();
    std::map<std::string, std::string> out;
    if (!reader) return out;
    EXPECT_EQ(reader->footer().ranges, u.ranges);
    for (const auto& r : u.ranges) {
      auto got = reader->read(r);
      EXPECT_TRUE(got) << got.err().describe();
      if (got) out[r.stream] += text_of(*got);
    }
    return out;
  }

  raft::sim_scheduler sched;
  raft::sim_executor ex;
  mem_object_store store;
  std::unique_ptr<uploader> up;
  std::vector<uploaded_object> reports;
  std::map<std::string, object_bytes> sent;
  int puts = 0;
  bool hold = false;
  struct held_put {
    held_put(std::string k, object_bytes b, uploader::put_done d)
        : key(std::move(k)), bytes(std::move(b)), done(std::move(d)) {}
    std::string key;
    object_bytes bytes;
    uploader::put_done done;
  };
  std::vector<held_put> held;
};

uploader_options small_objects() {
  uploader_options o;
  o.epoch = cold_epoch(1);
  o.group = cold_group(3);
  o.term = leader_term(7);
  o.target_object_bytes = 1000;
  o.block_size = 256;
  o.max_age = 30s;
  o.retry_base = 100ms;
  o.retry_max = 1s;
  return o;
}

void add_text(uploader& up, const std::string& stream, std::uint64_t first, const std::string& text) {
  auto b = bytes_of(text);
  up.add(stream, stream_offset(first), stream_offset(first + b.size()), b);
}

TEST(uploader, several_streams_share_one_object_named_by_epoch_group_term_and_sequence) {
  harness h(small_objects());
  const std::string a = stream_bytes("/a", 300), b = stream_bytes("/b", 400), c = stream_bytes("/c", 300);
  add_text(*h.up, "/a", 0, a);
  add_text(*h.up, "/b", 1000, b);
  EXPECT_EQ(h.puts, 0);  // 700 bytes: under the target, still filling
  add_text(*h.up, "/c", 0, c);
  h.run_for(1ms);
  ASSERT_EQ(h.reports.size(), 1u);
  const uploaded_object& u = h.reports[0];
  EXPECT_EQ(u.key, object_key(object_name{cold_epoch(1), cold_group(3), leader_term(7), upload_seq(0)}));
  ASSERT_EQ(u.ranges.size(), 3u);
  EXPECT_EQ(u.ranges[1].stream, "/b");
  EXPECT_EQ(u.ranges[1].first, stream_offset(1000));
  EXPECT_EQ(u.ranges[1].end, stream_offset(1400));
  auto back = h.read_back(u);
  EXPECT_EQ(back["/a"], a);
  EXPECT_EQ(back["/b"], b);
  EXPECT_EQ(back["/c"], c);
  EXPECT_EQ(h.up->bytes_waiting(), 0u);
  EXPECT_EQ(h.up->next_seq(), upload_seq(1));
}

TEST(uploader, a_slow_stream_goes_after_max_age) {
  harness h(small_objects());
  add_text(*h.up, "/slow", 0, "tick");
  h.run_for(29'999ms);
  EXPECT_TRUE(h.reports.empty());
  EXPECT_EQ(h.up->bytes_waiting(), 4u);
  h.run_for(2ms);
  ASSERT_EQ(h.reports.size(), 1u);
  EXPECT_EQ(h.read_back(h.reports[0])["/slow"], "tick");
}

TEST(uploader, a_long_range_is_cut_at_each_object_end) {
  harness h(small_objects());
  const std::string big = stream_bytes("/big", 2500);
  add_text(*h.up, "/big", 500, big);
  h.up->flush();
  h.run_for(1ms);
  ASSERT_EQ(h.reports.size(), 3u);  // 1000 + 1000 + 500
  std::string joined;
  std::uint64_t next = 500;
  for (const auto& u : h.reports) {
    ASSERT_EQ(u.ranges.size(), 1u);
    EXPECT_EQ(u.ranges[0].first, stream_offset(next));
    next = u.ranges[0].end.value();
    joined += h.read_back(u)["/big"];
  }
  EXPECT_EQ(next, 3000u);
  EXPECT_EQ(joined, big);
}

TEST(uploader, each_part_of_a_cut_range_lists_the_records_that_begin_in_it) {
  harness h(small_objects());
  const std::string big = stream_bytes("/big", 2500);
  // Records of 300 bytes from 500 (the last one shorter): objects end at 1500 and 2500, inside records.
  std::vector<object_record> records;
  for (std::uint64_t at = 500; at < 3000; at += 300) {
    records.push_back(
        object_record{stream_offset(at), stream_offset(std::min<std::uint64_t>(at + 300, 3000)), 1});
  }
  auto b = bytes_of(big);
  h.up->add("/big", stream_offset(500), stream_offset(3000), b, false, records);
  h.up->flush();
  h.run_for(1ms);
  std::vector<object_record> listed;
  for (const auto& u : h.reports) {
    auto reader = object_reader::open(h.store, u.key, u.size);
    ASSERT_TRUE(reader) << reader.err().describe();
    ASSERT_EQ(reader->footer().ranges.size(), 1u);
    auto got = reader->records(0);
    ASSERT_TRUE(got) << got.err().describe();
    for (const auto& r : *got) {
      // Each record is listed where it begins, with its whole extent (the last may end in the next object).
      EXPECT_GE(r.begin, u.ranges[0].first);
      EXPECT_LT(r.begin, u.ranges[0].end);
      listed.push_back(r);
    }
  }
  EXPECT_GE(h.reports.size(), 3u);
  EXPECT_EQ(listed, records);
}

TEST(uploader, a_whole_range_is_never_cut_and_waits_for_the_next_object) {
  harness h(small_objects());
  auto add_whole = [&](const std::string& stream, std::uint64_t first, const std::string& text) {
    auto b = bytes_of(text);
    h.up->add(stream, stream_offset(first), stream_offset(first + b.size()), b, true);
  };
  const std::string a = stream_bytes("/j", 700), b = stream_bytes("/j", 600), c = stream_bytes("/j", 2500);
  add_whole("/j", 0, a);
  add_whole("/j", 700, b);   // does not fit beside the first: the first object goes alone
  add_whole("/j", 1300, c);  // larger than the target: alone, whole
  h.up->flush();
  h.run_for(1ms);
  ASSERT_EQ(h.reports.size(), 3u);
  const std::uint64_t ends[] = {700, 1300, 3800};
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(h.reports[i].ranges.size(), 1u);
    EXPECT_EQ(h.reports[i].ranges[0].end, stream_offset(ends[i]));
  }
  EXPECT_EQ(h.read_back(h.reports[2])["/j"], c);
}

TEST(uploader, failed_uploads_are_retried_with_the_same_key_and_bytes_until_they_land) {
  harness h(small_objects());
  h.store.inject(
      injected_fault{store_op::put, fault_kind::error, make_store_error(store_errc::auth, "denied", 403)}, 3);
  add_text(*h.up, "/a", 0, stream_bytes("/a", 1000));
  h.run_for(1ms);
  EXPECT_TRUE(h.reports.empty());
  EXPECT_NE(h.up->last_error().find("denied"), std::string::npos) << h.up->last_error();
  EXPECT_EQ(h.up->bytes_waiting(), 1000u);
  h.run_for(100ms + 200ms + 400ms);  // the backoff doubles: 100, 200, 400 ms
  ASSERT_EQ(h.reports.size(), 1u);
  EXPECT_EQ(h.puts, 4);
  EXPECT_EQ(h.up->attempts_failed(), 3u);
  EXPECT_EQ(h.up->last_error(), "");
  EXPECT_EQ(h.store.keys().size(), 1u);
}

TEST(uploader, under_random_faults_every_byte_lands_once_in_order_for_many_seeds) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    harness h(small_objects(), seed);
    // Errors, timeouts and resets, some after the object landed (the ambiguous upload).
    h.store.set_random_faults(0.4, seed);
    std::map<std::string, std::string> written;
    std::map<std::string, std::uint64_t> tails;
    for (int i = 0; i < 60; ++i) {
      const std::string name = "/s" + std::to_string(h.sched.uniform(0, 4));
      const std::string text = stream_bytes(name, static_cast<std::size_t>(h.sched.uniform(1, 700)));
      add_text(*h.up, name, tails[name], text);
      tails[name] += text.size();
      written[name] += text;
      h.run_for(std::chrono::milliseconds(h.sched.uniform(0, 200)));
    }
    h.up->flush();
    h.run_for(120s);
    EXPECT_EQ(h.up->bytes_waiting(), 0u);
    EXPECT_EQ(h.up->objects_in_flight(), 0u);
    h.store.set_random_faults(0, seed);  // read back without faults
    std::map<std::string, std::string> read;
    std::map<std::string, std::uint64_t> next;
    for (std::size_t i = 0; i < h.reports.size(); ++i) {
      EXPECT_EQ(h.reports[i].name.seq, upload_seq(i));  // reported in sequence order, each once
      for (const auto& r : h.reports[i].ranges) {
        EXPECT_EQ(r.first, stream_offset(next[r.stream]));  // a stream's ranges follow on
        next[r.stream] = r.end.value();
      }
      for (auto& [name, text] : h.read_back(h.reports[i])) read[name] += text;
    }
    EXPECT_EQ(read, written);
    EXPECT_EQ(h.store.keys().size(), h.reports.size());
    EXPECT_GT(h.up->attempts_failed(), 0u);  // the faults did strike
  }
}

TEST(uploader, reports_wait_for_every_object_before_them) {
  harness h(small_objects());
  h.hold = true;
  add_text(*h.up, "/a", 0, stream_bytes("/a", 1000));     // seq 0
  add_text(*h.up, "/a", 1000, stream_bytes("/a", 1000));  // seq 1
  ASSERT_EQ(h.held.size(), 2u);
  // The second lands first: not reported until the first has.
  h.held[1].done(h.store.put(h.held[1].key, h.held[1].bytes));
  EXPECT_TRUE(h.reports.empty());
  h.held[0].done(h.store.put(h.held[0].key, h.held[0].bytes));
  ASSERT_EQ(h.reports.size(), 2u);
  EXPECT_EQ(h.reports[0].name.seq, upload_seq(0));
  EXPECT_EQ(h.reports[1].name.seq, upload_seq(1));
}

TEST(uploader, a_store_that_kept_other_bytes_is_not_an_upload) {
  harness h(small_objects());
  h.hold = true;
  add_text(*h.up, "/a", 0, stream_bytes("/a", 1000));
  ASSERT_EQ(h.held.size(), 1u);
  h.held[0].done(object_info{h.held[0].key, 12, "etag"});
  EXPECT_TRUE(h.reports.empty());
  EXPECT_NE(h.up->last_error().find("12 bytes"), std::string::npos) << h.up->last_error();
  h.hold = false;
  h.run_for(100ms);
  ASSERT_EQ(h.reports.size(), 1u);
}

TEST(uploader, after_stop_nothing_is_sent_or_reported) {
  harness h(small_objects());
  h.hold = true;
  add_text(*h.up, "/a", 0, stream_bytes("/a", 1000));
  add_text(*h.up, "/b", 0, "still filling");
  h.up->stop();
  h.held[0].done(h.store.put(h.held[0].key, h.held[0].bytes));  // landed after the leader stepped down
  h.run_for(60s);
  EXPECT_TRUE(h.reports.empty());
  EXPECT_EQ(h.puts, 1);
  add_text(*h.up, "/c", 0, stream_bytes("/c", 2000));
  h.run_for(60s);
  EXPECT_EQ(h.puts, 1);
  EXPECT_EQ(h.store.keys().size(), 1u);  // the orphan stays for the sweep
}

}  // namespace
}  // namespace weir::tier

// Forks read their inherited records from their source's log ("pointer-based stitching", PROTOCOL.md
// 4.2): reads across the fork point, forks of forks, soft-deleted sources, JSON mode, and what a fork
// holds in memory (its own records only, whatever its source's size).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "streams/state_machine.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

std::string join(const read_plan& p) {
  std::string out;
  for (const chunk_slice& s : p.slices) out.append(s.view());
  return out;
}

std::string read_all(const state_machine& sm, std::string_view path, std::uint64_t from = 0) {
  read_result r = sm.read(path, stream_offset(from), std::size_t{1} << 30);
  EXPECT_EQ(r.code, errc::ok) << path;
  EXPECT_TRUE(r.plan.up_to_date) << path;
  return join(r.plan);
}

create_command fork_of(state_machine& src, std::string path, std::string source,
                       std::optional<std::uint64_t> offset, std::string ct = "") {
  create_command c = make_create(std::move(path), std::move(ct));
  c.fork = resolve_fork(src, std::move(source), offset);
  return c;
}

append_command json_append(std::string path, std::string stored, std::uint32_t messages) {
  append_command a = make_append(std::move(path), "");
  a.content_type = "application/json";
  a.body = bytes(std::move(stored), messages);
  return a;
}

// Every read of `path` from every offset with every chunk limit up to `max_limit` returns exactly the
// bytes of `expected` there (a byte stream: reads fill the limit, cutting records).
void expect_reads_match(const state_machine& sm, std::string_view path, const std::string& expected,
                        std::size_t max_limit = 8) {
  for (std::size_t from = 0; from <= expected.size(); ++from) {
    for (std::size_t limit = 1; limit <= max_limit; ++limit) {
      read_result r = sm.read(path, stream_offset(from), limit);
      ASSERT_EQ(r.code, errc::ok);
      const std::string want = expected.substr(from, limit);
      ASSERT_EQ(join(r.plan), want) << path << " from " << from << " limit " << limit;
      ASSERT_EQ(r.plan.bytes, want.size());
      ASSERT_EQ(r.plan.next.value(), from + want.size());
      ASSERT_EQ(r.plan.up_to_date, from + want.size() == expected.size());
    }
  }
}

TEST(fork_stitching, a_fork_at_zero_inherits_nothing) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  ASSERT_EQ(sm.create(fork_of(sm, "/f", "/src", 0)).code, errc::ok);
  EXPECT_EQ(read_all(sm, "/f"), "");
  EXPECT_EQ(sm.head("/f", t0).meta->tail.value(), 0u);
  (void)sm.append(make_append("/f", "XY"));
  (void)sm.append(make_append("/src", "def"));
  EXPECT_EQ(read_all(sm, "/f"), "XY");
  expect_reads_match(sm, "/f", "XY");
  EXPECT_EQ(sm.records_held("/f"), 1u);
}

TEST(fork_stitching, a_fork_at_the_tail_inherits_everything_and_no_later_append) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  (void)sm.append(make_append("/src", "defg"));
  ASSERT_EQ(sm.create(fork_of(sm, "/f", "/src", std::nullopt)).code, errc::ok);
  EXPECT_EQ(sm.head("/f", t0).meta->tail.value(), 7u);
  (void)sm.append(make_append("/src", "SOURCE"));
  EXPECT_EQ(read_all(sm, "/f"), "abcdefg");
  EXPECT_TRUE(sm.read("/f", stream_offset(7), 100).plan.slices.empty());
  (void)sm.append(make_append("/f", "hi"));
  expect_reads_match(sm, "/f", "abcdefghi");
  EXPECT_EQ(sm.records_held("/f"), 1u);
}

TEST(fork_stitching, a_fork_inside_a_record_cuts_it_at_the_fork_point) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  (void)sm.append(make_append("/src", "defgh"));
  ASSERT_EQ(sm.create(fork_of(sm, "/f", "/src", 5)).code, errc::ok);
  (void)sm.append(make_append("/f", "XYZ"));
  (void)sm.append(make_append("/f", "W"));
  expect_reads_match(sm, "/f", "abcdeXYZW");
  expect_reads_match(sm, "/src", "abcdefgh");
  // A fork point inside the inherited record is a boundary of the fork (its own records start there).
  create_command again = fork_of(sm, "/g", "/f", 4);  // inside "de" as /f sees it
  ASSERT_EQ(sm.create(again).code, errc::ok);
  (void)sm.append(make_append("/g", "!"));
  expect_reads_match(sm, "/g", "abcd!");
}

TEST(fork_stitching, chains_of_forks_read_like_a_model_of_them) {
  // Random chains: each fork of a random stream at a random point (before or after the source's own
  // fork point), random appends everywhere; every read is compared with the streams' contents.
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    state_machine sm;
    std::map<std::string, std::string> model;
    std::vector<std::string> names = {"/s0"};
    (void)sm.create(make_create("/s0", "text/plain", "s0:"));
    model["/s0"] = "s0:";
    for (int step = 0; step < 60; ++step) {
      const std::string& pick = names[rng() % names.size()];
      if (rng() % 3 == 0) {
        std::string name = "/s" + std::to_string(names.size());
        std::uint64_t point = rng() % (model[pick].size() + 1);
        ASSERT_EQ(sm.create(fork_of(sm, name, pick, point)).code, errc::ok);
        model[name] = model[pick].substr(0, point);
        names.push_back(name);
      } else {
        std::string body =
            std::to_string(step) + std::string(1 + rng() % 3, static_cast<char>('a' + step % 26));
        ASSERT_EQ(sm.append(make_append(pick, body)).code, errc::ok);
        model[pick] += body;
      }
    }
    for (const auto& [name, content] : model) {
      EXPECT_EQ(read_all(sm, name), content) << name;
      expect_reads_match(sm, name, content, 5);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(fork_stitching, a_fork_of_a_soft_deleted_source_keeps_reading_it) {
  state_machine sm;
  (void)sm.create(make_create("/a", "text/plain", "abc"));
  ASSERT_EQ(sm.create(fork_of(sm, "/b", "/a", 2)).code, errc::ok);
  (void)sm.append(make_append("/b", "BB"));
  ASSERT_EQ(sm.create(fork_of(sm, "/c", "/b", 3)).code, errc::ok);
  (void)sm.append(make_append("/c", "C"));

  ASSERT_EQ(sm.remove(delete_command{"/a", t0}).code, errc::ok);  // soft: /b references it
  ASSERT_EQ(sm.remove(delete_command{"/b", t0}).code, errc::ok);  // soft: /c references it
  EXPECT_EQ(sm.read("/a", std::nullopt, 100).code, errc::gone);
  EXPECT_EQ(sm.read("/b", std::nullopt, 100).code, errc::gone);
  expect_reads_match(sm, "/c", "abBC");

  outcome del = sm.remove(delete_command{"/c", t0});
  ASSERT_EQ(sources(del.release), std::vector<std::string>{"/b"});
  outcome rel_b = sm.fork_release(fork_release_command{"/b"});
  EXPECT_EQ(rel_b.removed, std::vector<std::string>{"/b"});
  ASSERT_EQ(sources(rel_b.release), std::vector<std::string>{"/a"});
  outcome rel_a = sm.fork_release(fork_release_command{"/a"});
  EXPECT_EQ(rel_a.removed, std::vector<std::string>{"/a"});
  EXPECT_EQ(sm.size(), 0u);
}

TEST(fork_stitching, json_reads_keep_messages_whole_across_the_fork_point) {
  state_machine sm;
  create_command src = make_create("/j", "application/json");
  src.initial = bytes("1,2,", 2);
  ASSERT_EQ(sm.create(src).code, errc::ok);
  ASSERT_EQ(sm.append(json_append("/j", "{\"a\":3},", 1)).code, errc::ok);  // ends at 12
  // Not a message boundary of the source: refused.
  fork_retain_command inside{"/j", stream_offset(5), 0, "", t0};
  EXPECT_EQ(sm.fork_retain(inside).code, errc::bad_fork_offset);

  ASSERT_EQ(sm.create(fork_of(sm, "/f", "/j", 4)).code, errc::ok);
  ASSERT_EQ(sm.append(json_append("/f", "[9],", 1)).code, errc::ok);
  ASSERT_EQ(sm.append(json_append("/j", "4,", 1)).code, errc::ok);  // after the fork point
  EXPECT_EQ(read_all(sm, "/f"), "1,2,[9],");

  // Whole records only: a limit of 1 still returns one record per read, inherited then own.
  read_result r = sm.read("/f", stream_offset(0), 1);
  EXPECT_EQ(join(r.plan), "1,2,");
  EXPECT_EQ(r.plan.next.value(), 4u);
  r = sm.read("/f", r.plan.next, 1);
  EXPECT_EQ(join(r.plan), "[9],");
  EXPECT_TRUE(r.plan.up_to_date);
  // A read spanning both returns both (the protocol layer wraps them in one array, PROTOCOL.md 7.3).
  r = sm.read("/f", stream_offset(0), 8);
  EXPECT_EQ(join(r.plan), "1,2,[9],");
  ASSERT_EQ(r.plan.slices.size(), 2u);

  // A fork of the fork at the inherited boundary 4 and at 0; boundaries come from the whole chain.
  fork_retain_command at_own{"/f", stream_offset(4), 0, "", t0};
  EXPECT_EQ(sm.fork_retain(at_own).code, errc::ok);
  fork_retain_command inherited_inside{"/f", stream_offset(2), 0, "", t0};
  EXPECT_EQ(sm.fork_retain(inherited_inside).code, errc::bad_fork_offset);
  ASSERT_EQ(sm.create(fork_of(sm, "/g", "/f", 8)).code, errc::ok);
  ASSERT_EQ(sm.append(json_append("/g", "true,", 1)).code, errc::ok);
  EXPECT_EQ(read_all(sm, "/g"), "1,2,[9],true,");
  r = sm.read("/g", stream_offset(4), 1);
  EXPECT_EQ(join(r.plan), "[9],");
}

TEST(fork_stitching, a_sub_offset_fork_of_a_fork_sees_the_record_cut_at_its_source_s_fork_point) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abcdefgh"));
  ASSERT_EQ(sm.create(fork_of(sm, "/f", "/src", 6)).code, errc::ok);
  fork_retain_command r{"/f", stream_offset(0), 6, "", t0};
  outcome o = sm.fork_retain(r);
  ASSERT_EQ(o.code, errc::ok);
  ASSERT_TRUE(o.sub_record.has_value());
  EXPECT_EQ(o.sub_record->data.view(), "abcdef");  // not "abcdefgh": /f ends at 6
  fork_retain_command past{"/f", stream_offset(0), 7, "", t0};
  EXPECT_EQ(sm.fork_retain(past).code, errc::bad_sub_offset);
}

TEST(fork_stitching, a_fork_holds_none_of_its_source_s_records) {
  // What a fork costs does not depend on its source's size: it holds only its own records.
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "r"));
  for (int i = 1; i < 100'000; ++i) (void)sm.append(make_append("/src", "r"));
  ASSERT_EQ(sm.records_held("/src"), 100'000u);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(sm.create(fork_of(sm, "/f" + std::to_string(i), "/src", std::nullopt)).code, errc::ok);
  }
  for (int i = 0; i < 200; ++i) EXPECT_EQ(sm.records_held("/f" + std::to_string(i)), 0u);
  (void)sm.append(make_append("/f7", "own"));
  EXPECT_EQ(sm.records_held("/f7"), 1u);
  EXPECT_EQ(sm.records_held("/src"), 100'000u);
  read_result r = sm.read("/f7", stream_offset(99'998), 100);
  EXPECT_EQ(join(r.plan), "rrown");
  // The checkpoint does not repeat the source's records per fork either: 200 forks of a 100,000-record
  // stream cost far less than one more copy of the source's records would.
  state_machine alone;
  (void)alone.create(make_create("/src", "text/plain", "r"));
  for (int i = 1; i < 100'000; ++i) (void)alone.append(make_append("/src", "r"));
  const std::size_t source_only = alone.snapshot().size();
  EXPECT_LT(sm.snapshot().size(), source_only + 200 * 200);
}

TEST(fork_stitching, a_chain_of_a_thousand_forks_holds_one_record_each) {
  state_machine sm;
  (void)sm.create(make_create("/c0", "text/plain", "0,"));
  std::string expected = "0,";
  for (int i = 1; i <= 1000; ++i) {
    const std::string prev = "/c" + std::to_string(i - 1);
    const std::string path = "/c" + std::to_string(i);
    ASSERT_EQ(sm.create(fork_of(sm, path, prev, std::nullopt)).code, errc::ok);
    const std::string body = std::to_string(i) + ",";
    ASSERT_EQ(sm.append(make_append(path, body)).code, errc::ok);
    expected += body;
  }
  std::size_t held = 0;
  for (int i = 0; i <= 1000; ++i) {
    std::size_t n = sm.records_held("/c" + std::to_string(i));
    EXPECT_EQ(n, 1u) << i;
    held += n;
  }
  EXPECT_EQ(held, 1001u);  // linear in the chain's length, not quadratic
  EXPECT_EQ(read_all(sm, "/c1000"), expected);
  EXPECT_EQ(read_all(sm, "/c500"), expected.substr(0, sm.head("/c500", t0).meta->tail.value()));
  // In chunks: every chunk continues exactly where the previous ended.
  std::string chunked;
  stream_offset at(0);
  for (;;) {
    read_result r = sm.read("/c1000", at, 7);
    chunked += join(r.plan);
    at = r.plan.next;
    if (r.plan.up_to_date) break;
  }
  EXPECT_EQ(chunked, expected);

  // Deleting the chain from its root soft-deletes every link; deleting its end cascades through all.
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(sm.remove(delete_command{"/c" + std::to_string(i), t0}).code, errc::ok);
  EXPECT_EQ(read_all(sm, "/c1000"), expected);
  outcome o = sm.remove(delete_command{"/c1000", t0});
  int removed = 0;
  while (!o.release.empty()) {
    fork_release_command next = o.release.front();
    o = sm.fork_release(next);
    removed += static_cast<int>(o.removed.size());
  }
  EXPECT_EQ(removed, 1000);
  EXPECT_EQ(sm.size(), 0u);
}

TEST(fork_stitching, a_fork_on_another_core_reads_its_source_while_the_source_changes) {
  // Two state machines as two cores: the source's core appends, locates and evicts while the fork's
  // core reads the inherited records through the shared log. Every read returns the inherited bytes
  // exactly (hot) or as cold slices at the place the source's core gave them.
  state_machine src_core;
  state_machine fork_core;
  (void)src_core.create(make_create("/src", "text/plain", "0123456789"));
  for (int i = 1; i < 2000; ++i) (void)src_core.append(make_append("/src", "0123456789"));
  const std::uint64_t gen = src_core.head("/src", t0).meta->generation;
  ASSERT_EQ(fork_core.create(fork_of(src_core, "/f", "/src", std::nullopt)).code, errc::ok);
  (void)fork_core.append(make_append("/f", "own"));

  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t end = 10ull * (i + 1);
      (void)src_core.locate(gen, end, disk_location{1, end, 0, 0});
      (void)src_core.evict(gen, end);
      (void)src_core.append(make_append("/src", "after"));
    }
    done = true;
  });
  int reads = 0;
  auto read_loop = [&] {
    while (!done || reads < 10) {
      read_result r = fork_core.read("/f", stream_offset(0), std::size_t{1} << 20);
      ASSERT_EQ(r.plan.bytes, 20'003u);
      std::uint64_t pos = 0;
      for (const chunk_slice& s : r.plan.slices) {
        if (s.cold()) {
          ASSERT_EQ(s.at.offset, pos + s.begin + s.size) << "cold slice at " << pos;
        } else if (pos < 20'000) {
          ASSERT_EQ(std::string(s.view()), std::string("0123456789").substr(s.begin, s.size)) << pos;
        } else {
          ASSERT_EQ(std::string(s.view()), "own");
        }
        pos += s.size;
      }
      ++reads;
    }
  };
  read_loop();  // returns early on a failed assertion; the writer is joined either way
  writer.join();
  EXPECT_EQ(fork_core.records_held("/f"), 1u);
}

TEST(fork_stitching, a_rebuilt_core_keeps_the_logs_that_forks_read) {
  // A core rebuilt from its log after a write failure (rebuild_core) replays into a fresh machine;
  // adopt_logs hands the fresh records to the old log objects, so that a fork on another core and a
  // fork on the same core keep reading the source, including what the rebuilt core does afterwards.
  auto replay = [](state_machine& sm) {
    (void)sm.create(make_create("/src", "text/plain", "abc"));
    (void)sm.append(make_append("/src", "def"));
  };
  state_machine src_core, fork_core;
  replay(src_core);
  ASSERT_EQ(fork_core.create(fork_of(src_core, "/f", "/src", 5)).code, errc::ok);
  ASSERT_EQ(src_core.create(fork_of(src_core, "/g", "/src", 4)).code, errc::ok);
  (void)src_core.append(make_append("/src", "lost"));  // applied in memory, its log write failed

  state_machine fresh;
  replay(fresh);
  fork_retain_command retain{"/src", stream_offset(5), 0, "", t0};
  ASSERT_EQ(fresh.fork_retain(retain).code, errc::ok);
  create_command g = fork_of(fresh, "/g", "/src", 4);
  g.fork->resolved.source_log.reset();  // replayed: not linked
  ASSERT_EQ(fresh.create(g).code, errc::ok);
  ASSERT_EQ(fresh.forks_to_stitch().size(), 1u);
  fresh.adopt_logs(src_core);
  EXPECT_TRUE(fresh.forks_to_stitch().empty());  // /g kept its link
  src_core.swap(fresh);

  EXPECT_EQ(read_all(src_core, "/src"), "abcdef");  // the lost append is gone
  EXPECT_EQ(read_all(src_core, "/g"), "abcd");
  EXPECT_EQ(read_all(fork_core, "/f"), "abcde");
  // The rebuilt core's hot tier evicts through the same object the other core's fork reads.
  const std::uint64_t gen = src_core.head("/src", t0).meta->generation;
  ASSERT_TRUE(src_core.locate(gen, 3, disk_location{2, 3, 0, 0}));
  ASSERT_EQ(src_core.evict(gen, 3), 3u);
  read_result r = fork_core.read("/f", stream_offset(0), 100);
  ASSERT_EQ(r.plan.slices.size(), 2u);
  EXPECT_TRUE(r.plan.slices[0].cold());
  EXPECT_EQ(r.plan.slices[0].at, (disk_location{2, 3, 0, 0}));
  EXPECT_EQ(r.plan.slices[1].view(), "de");
}

}  // namespace
}  // namespace weir::streams

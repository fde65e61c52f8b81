// state_machine::snapshot_part / restore_part: one part of a machine (a cluster's
// raft group) round-trips into a machine in another state, leaving the rest alone; forks read their
// inherited records whichever part is restored first; damaged blobs change nothing.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "streams/command_codec.h"
#include "streams/state_machine.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

// Part A: paths under /a/; part B: the rest.
bool in_a(std::string_view p) {
  return p.starts_with("/a/");
}
bool in_b(std::string_view p) {
  return !in_a(p);
}
bool any_location(const disk_location&) {
  return true;
}

std::vector<std::byte> part_of(const state_machine& sm, bool (*part)(std::string_view)) {
  auto blob = sm.snapshot_part(part, any_location);
  EXPECT_TRUE(blob.has_value()) << blob.err().reason;
  return blob ? *blob : std::vector<std::byte>{};
}

std::span<const std::byte> as_span(const std::vector<std::byte>& v) {
  return {v.data(), v.size()};
}

// A create that takes generation `g`, as a cluster gives it from the raft index.
outcome create_at(state_machine& sm, std::uint64_t g, create_command c) {
  sm.set_next_generation(g);
  return sm.create(c);
}

std::string read_all(const state_machine& sm, const std::string& path) {
  std::string out;
  for (const chunk_slice& s : sm.read(path, std::nullopt, 1 << 20).plan.slices) {
    out += s.cold() ? "<cold " + std::to_string(s.at.segment) + ">" : std::string(s.view());
  }
  return out;
}

TEST(snapshot_part, where_a_parts_held_records_begin_survives_its_restore) {
  state_machine x;
  ASSERT_EQ(create_at(x, 100, make_create("/a/cold")).code, errc::ok);
  ASSERT_EQ(create_at(x, 101, make_create("/a/warm")).code, errc::ok);
  for (const char* body : {"aaaa", "bbbb", "cccc"}) {
    ASSERT_EQ(x.append(make_append("/a/cold", body)).code, errc::ok);
    ASSERT_EQ(x.append(make_append("/a/warm", body)).code, errc::ok);
  }
  // Nothing forgotten: the version (6) a node without a cold tier reads.
  const auto plain = part_of(x, in_a);
  ASSERT_EQ(std::const_pointer_cast<memory_log>(x.log_of("/a/cold"))->forget_before(stream_offset(8)), 8u);
  const auto held = part_of(x, in_a);
  EXPECT_NE(held, plain);
  state_machine y;
  ASSERT_EQ(create_at(y, 200, make_create("/b/other", "text/plain", "keep")).code, errc::ok);
  auto st = y.restore_part(as_span(held), in_a);
  ASSERT_TRUE(st.has_value()) << st.err().reason;
  EXPECT_EQ(y.log_of("/a/cold")->held_from().value(), 8u);
  EXPECT_EQ(y.log_of("/a/cold")->tail().value(), 12u);
  EXPECT_EQ(read_all(y, "/a/warm"), "aaaabbbbcccc");
  read_result r = y.read("/a/cold", stream_offset(0), 100);
  ASSERT_TRUE(r.plan.in_objects.has_value());  // the bytes before 8 are the cold index's to find
  EXPECT_EQ(read_all(y, "/b/other"), "keep");
  EXPECT_EQ(part_of(y, in_a), held);
  // The same incarnation restored again keeps its log object and takes the held start along.
  auto again = y.restore_part(as_span(plain), in_a);
  ASSERT_TRUE(again.has_value()) << again.err().reason;
  EXPECT_EQ(y.log_of("/a/cold")->held_from().value(), 0u);
  EXPECT_EQ(read_all(y, "/a/cold"), "aaaabbbbcccc");
  // A whole-machine restore refuses a part.
  state_machine z;
  EXPECT_FALSE(z.restore(as_span(held)).has_value());
}

TEST(snapshot_part, a_part_round_trips_into_a_machine_in_another_state_and_the_rest_stays) {
  state_machine x;
  ASSERT_EQ(create_at(x, 100, make_create("/a/1", "text/plain", "abc")).code, errc::ok);
  ASSERT_EQ(x.append(make_append("/a/1", "de")).code, errc::ok);
  ASSERT_TRUE(x.locate(100, 3, disk_location{4, 40, 0, 9}));
  ASSERT_GT(x.evict(100, 3), 0u);
  ASSERT_EQ(create_at(x, 101, make_create("/a/held", "text/plain", "zz")).code, errc::ok);
  ASSERT_EQ(x.remove(delete_command{"/a/held", t0, 60'000}).code, errc::ok);
  ASSERT_EQ(create_at(x, 102, make_create("/b/x", "text/plain", "bx")).code, errc::ok);

  state_machine y;
  ASSERT_EQ(create_at(y, 200, make_create("/a/1", "application/json", "[1],")).code, errc::ok);
  ASSERT_EQ(create_at(y, 201, make_create("/a/old", "text/plain", "old")).code, errc::ok);
  ASSERT_EQ(create_at(y, 202, make_create("/b/y", "text/plain", "by")).code, errc::ok);
  ASSERT_EQ(create_at(y, 203, make_create("/b/held", "text/plain", "h")).code, errc::ok);
  ASSERT_EQ(y.remove(delete_command{"/b/held", t0, 60'000}).code, errc::ok);
  y.set_next_generation(300);
  const auto y_b = part_of(y, in_b);
  const std::uint64_t removals = y.removals();

  std::vector<std::string> removed;
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a, &removed).has_value());
  EXPECT_EQ(part_of(y, in_a), part_of(x, in_a));
  EXPECT_EQ(part_of(y, in_b), y_b);
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{"/a/1", "/a/old"}));
  EXPECT_EQ(y.removals(), removals + 2);
  EXPECT_FALSE(y.holds_generation(200));
  EXPECT_FALSE(y.holds_generation(201));
  EXPECT_TRUE(y.holds_generation(100));
  EXPECT_EQ(y.held_paths(), 2u);
  EXPECT_EQ(y.create(make_create("/a/held")).code, errc::path_held);
  EXPECT_EQ(read_all(y, "/a/1"), "<cold 4>de");
  // The next generation is the caller's (the raft index), not the blob's.
  EXPECT_EQ(y.create(make_create("/a/new")).meta->generation, 300u);
}

TEST(snapshot_part, the_same_state_gives_the_same_bytes) {
  state_machine x, y;
  ASSERT_EQ(create_at(x, 1, make_create("/a/1", "text/plain", "a")).code, errc::ok);
  ASSERT_EQ(create_at(x, 2, make_create("/a/2", "text/plain", "b")).code, errc::ok);
  ASSERT_EQ(create_at(y, 2, make_create("/a/2", "text/plain", "b")).code, errc::ok);
  ASSERT_EQ(create_at(y, 3, make_create("/b/other", "text/plain", "c")).code, errc::ok);
  ASSERT_EQ(create_at(y, 1, make_create("/a/1", "text/plain", "a")).code, errc::ok);
  EXPECT_EQ(part_of(x, in_a), part_of(y, in_a));
  EXPECT_NE(part_of(x, in_b), part_of(y, in_b));
}

TEST(snapshot_part, only_referencable_locations_are_references_and_a_cold_unreferencable_record_fails) {
  state_machine x;
  ASSERT_EQ(create_at(x, 1, make_create("/a/s", "text/plain", "one")).code, errc::ok);
  ASSERT_EQ(x.append(make_append("/a/s", "two")).code, errc::ok);
  ASSERT_EQ(x.append(make_append("/a/s", "three")).code, errc::ok);
  ASSERT_TRUE(x.locate(1, 3, disk_location{4, 40, 0, 9}));
  ASSERT_TRUE(x.locate(1, 6, disk_location{6, 40, 0, 9}));  // hot, located, not durable in the data log
  ASSERT_GT(x.evict(1, 3), 0u);
  auto durable = [](const disk_location& at) { return at.segment < 5; };
  auto blob = x.snapshot_part(in_a, durable);
  ASSERT_TRUE(blob.has_value()) << blob.err().reason;
  state_machine y;
  ASSERT_TRUE(y.restore_part(as_span(*blob), in_a).has_value());
  EXPECT_EQ(read_all(y, "/a/s"), "<cold 4>twothree");  // "two" and "three" inlined: restored hot
  EXPECT_EQ(y.referenced_segments(0), std::vector<std::uint64_t>{4});

  ASSERT_GT(x.evict(1, 6), 0u);  // cold, and its segment not referencable
  auto refused = x.snapshot_part(in_a, durable);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.err().as<codec_errc>(), codec_errc::bad_value);
  EXPECT_NE(refused.err().reason.find("/a/s"), std::string::npos) << refused.err().reason;
  EXPECT_TRUE(x.snapshot_part(in_b, durable).has_value());  // other parts are not affected
}

// A source in part A (/a/src, "abcdef") and its fork at 4 in part B (/b/fork, own "XY"), as one node has
// them.
void make_fork_pair(state_machine& sm) {
  ASSERT_EQ(create_at(sm, 10, make_create("/a/src", "text/plain", "abcdef")).code, errc::ok);
  create_command f = make_create("/b/fork", "", "XY");
  f.fork = resolve_fork(sm, "/a/src", 4);
  ASSERT_EQ(create_at(sm, 20, f).code, errc::ok);
}

std::uint32_t refs_of(const state_machine& sm, const std::string& path) {
  for (const auto& [p, n] : sm.ref_counts()) {
    if (p == path) return n;
  }
  return 0;
}

TEST(snapshot_part, a_fork_in_another_part_reads_its_source_whichever_part_comes_first) {
  state_machine x;
  make_fork_pair(x);
  for (bool source_first : {true, false}) {
    SCOPED_TRACE(source_first);
    state_machine y;
    if (source_first) {
      ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
    }
    ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_b)), in_b).has_value());
    if (!source_first) {
      EXPECT_EQ(y.forks_to_stitch().size(), 1u);  // no source yet: unlinked
      ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
    }
    EXPECT_TRUE(y.forks_to_stitch().empty());
    EXPECT_EQ(read_all(y, "/b/fork"), "abcdXY");
    EXPECT_EQ(refs_of(y, "/a/src"), 1u);
    EXPECT_EQ(part_of(y, in_a), part_of(x, in_a));
    EXPECT_EQ(part_of(y, in_b), part_of(x, in_b));
  }
}

TEST(snapshot_part, restoring_the_source_part_keeps_forks_in_other_parts_reading_it) {
  state_machine x, y;
  make_fork_pair(x);
  make_fork_pair(y);
  // The source's part moves on at x (same incarnation): the fork at y reads through the new records.
  ASSERT_EQ(x.append(make_append("/a/src", "gh")).code, errc::ok);
  ASSERT_TRUE(x.locate(10, 6, disk_location{3, 40, 0, 9}));
  ASSERT_GT(x.evict(10, 6), 0u);
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
  EXPECT_EQ(read_all(y, "/b/fork"), "<cold 3>XY");  // the cold record, cut at the fork point
  EXPECT_EQ(read_all(y, "/a/src"), "<cold 3>gh");
  EXPECT_EQ(y.referenced_segments(0), std::vector<std::uint64_t>{3});
}

TEST(snapshot_part, a_soft_deleted_source_restored_still_serves_its_fork_and_cascades) {
  state_machine x, y;
  make_fork_pair(x);
  make_fork_pair(y);
  ASSERT_EQ(x.remove(delete_command{"/a/src", t0}).code, errc::ok);  // soft-deleted: the fork holds it
  std::vector<std::string> removed;
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a, &removed).has_value());
  EXPECT_EQ(removed, std::vector<std::string>{"/a/src"});  // live readers of the source are told
  EXPECT_EQ(y.head("/a/src", t0).code, errc::gone);
  EXPECT_EQ(read_all(y, "/b/fork"), "abcdXY");
  // The fork's delete, applied here, releases the source: gone for good.
  outcome del = y.remove(delete_command{"/b/fork", t0});
  ASSERT_EQ(sources(del.release), std::vector<std::string>{"/a/src"});
  EXPECT_EQ(y.fork_release(fork_release_command{"/a/src"}).removed, std::vector<std::string>{"/a/src"});
  EXPECT_EQ(y.size(), 0u);
}

TEST(snapshot_part, a_fork_that_vanished_from_its_part_leaves_its_release_to_the_sources_group) {
  state_machine x, y;
  make_fork_pair(x);
  make_fork_pair(y);
  ASSERT_EQ(x.remove(delete_command{"/a/src", t0}).code, errc::ok);
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
  // x applies the fork's delete, then the release its proposer sent to A (the source goes); y gets B's
  // snapshot instead, and the release as an entry of A.
  outcome del = x.remove(delete_command{"/b/fork", t0});
  ASSERT_EQ(sources(del.release), std::vector<std::string>{"/a/src"});
  (void)x.fork_release(fork_release_command{"/a/src"});
  ASSERT_EQ(x.size(), 0u);
  std::vector<std::string> removed;
  const std::uint64_t removals = y.removals();
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_b)), in_b, &removed).has_value());
  EXPECT_EQ(removed, (std::vector<std::string>{"/b/fork"}));
  EXPECT_EQ(y.size(), 1u);
  EXPECT_EQ(refs_of(y, "/a/src"), 1u);  // A's count is A's: the release has not reached A here yet
  EXPECT_EQ(y.removals(), removals + 1);
  // A's release entry, applied here: the cascade goes as on x.
  EXPECT_EQ(y.fork_release(fork_release_command{"/a/src"}).removed, std::vector<std::string>{"/a/src"});
  EXPECT_EQ(y.size(), 0u);
  EXPECT_FALSE(y.holds_generation(10));
  EXPECT_EQ(y.snapshot(), x.snapshot());
}

TEST(snapshot_part, a_source_part_ahead_of_the_fork_part_takes_the_blobs_count) {
  // x deleted the fork and applied its release (an entry of A); y still has the fork (its part B is
  // behind) and restores part A from x.
  state_machine x, y;
  make_fork_pair(x);
  make_fork_pair(y);
  ASSERT_EQ(sources(x.remove(delete_command{"/b/fork", t0}).release), std::vector<std::string>{"/a/src"});
  (void)x.fork_release(fork_release_command{"/a/src"});
  ASSERT_EQ(refs_of(x, "/a/src"), 0u);
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
  // The count is A's, exact at the snapshot's index, whatever forks of B this node still has: every
  // node that restores this snapshot holds the same count.
  EXPECT_EQ(refs_of(y, "/a/src"), 0u);
  EXPECT_EQ(part_of(y, in_a), part_of(x, in_a));
  // The fork, whose delete y has not applied yet, keeps the log it links to.
  EXPECT_EQ(y.remove(delete_command{"/a/src", t0}).removed, std::vector<std::string>{"/a/src"});
  EXPECT_EQ(y.head("/a/src", t0).code, errc::not_found);
  EXPECT_EQ(read_all(y, "/b/fork"), "abcdXY");
  // y applies B's delete of the fork: its release was x's to propose (and is in A already).
  ASSERT_EQ(sources(y.remove(delete_command{"/b/fork", t0}).release), std::vector<std::string>{"/a/src"});
  EXPECT_EQ(y.size(), 0u);
}

TEST(snapshot_part, a_fork_of_a_replaced_or_vanished_source_keeps_reading_what_it_forked) {
  // Part A at x: the source is gone (the fork was deleted there), then re-created (another incarnation).
  state_machine x, y;
  make_fork_pair(x);
  make_fork_pair(y);
  ASSERT_EQ(sources(x.remove(delete_command{"/b/fork", t0}).release), std::vector<std::string>{"/a/src"});
  (void)x.fork_release(fork_release_command{"/a/src"});
  ASSERT_EQ(x.remove(delete_command{"/a/src", t0}).code, errc::ok);
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
  EXPECT_EQ(y.head("/a/src", t0).code, errc::not_found);
  EXPECT_EQ(read_all(y, "/b/fork"), "abcdXY");  // the old source's records, immutable

  ASSERT_EQ(create_at(x, 30, make_create("/a/src", "text/plain", "NEWNEWNEW")).code, errc::ok);
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
  EXPECT_EQ(read_all(y, "/b/fork"), "abcdXY");  // still linked to what it forked
  EXPECT_EQ(refs_of(y, "/a/src"), 0u);          // the new incarnation's count: no fork of it
}

TEST(snapshot_part, forks_within_one_part_are_linked_and_counted_as_the_blob_says) {
  state_machine x;
  ASSERT_EQ(create_at(x, 1, make_create("/a/src", "text/plain", "abcdef")).code, errc::ok);
  create_command f = make_create("/a/fork", "", "Z");
  f.fork = resolve_fork(x, "/a/src", 2);
  ASSERT_EQ(create_at(x, 2, f).code, errc::ok);
  create_command ff = make_create("/a/fork2", "", "W");
  ff.fork = resolve_fork(x, "/a/fork", 3);
  ASSERT_EQ(create_at(x, 3, ff).code, errc::ok);
  state_machine y;
  ASSERT_TRUE(y.restore_part(as_span(part_of(x, in_a)), in_a).has_value());
  EXPECT_TRUE(y.forks_to_stitch().empty());
  EXPECT_EQ(read_all(y, "/a/fork2"), "abZW");
  EXPECT_EQ(part_of(y, in_a), part_of(x, in_a));
}

// --- damaged blobs ---

// A machine with every kind of content in both parts.
void make_rich(state_machine& sm) {
  make_fork_pair(sm);
  append_command w = make_append("/a/src", "gh");
  w.producer = producer_ref{"p1", 2, 0};
  w.stream_seq = "0001";
  ASSERT_EQ(sm.append(w).code, errc::ok);
  ASSERT_TRUE(sm.locate(10, 6, disk_location{3, 40, 1, 9}));
  ASSERT_GT(sm.evict(10, 6), 0u);
  create_command t = make_create("/a/ttl", "application/json", "1,");
  t.expiry.ttl_seconds = 60;
  ASSERT_EQ(create_at(sm, 11, t).code, errc::ok);
  ASSERT_EQ(create_at(sm, 12, make_create("/a/held", "text/plain", "x")).code, errc::ok);
  ASSERT_EQ(sm.remove(delete_command{"/a/held", t0, 1000}).code, errc::ok);
}

TEST(snapshot_part, every_truncation_of_a_part_blob_fails_and_changes_nothing) {
  state_machine x;
  make_rich(x);
  const auto blob = part_of(x, in_a);
  state_machine y;
  make_rich(y);
  ASSERT_EQ(y.append(make_append("/a/ttl", "2,")).code, errc::ok);  // y's part A differs from the blob
  const auto before = y.snapshot();
  for (std::size_t n = 0; n < blob.size(); ++n) {
    status st = y.restore_part(std::span<const std::byte>(blob.data(), n), in_a);
    ASSERT_FALSE(st.has_value()) << "prefix " << n;
    ASSERT_EQ(y.snapshot(), before) << "prefix " << n;
  }
  ASSERT_TRUE(y.restore_part(as_span(blob), in_a).has_value());
  EXPECT_EQ(part_of(y, in_a), blob);
}

TEST(snapshot_part, blobs_of_another_kind_or_another_part_are_bad_values) {
  state_machine x;
  make_rich(x);
  state_machine y;
  const auto full = x.snapshot();
  status st = y.restore_part(as_span(full), in_a);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.err().as<codec_errc>(), codec_errc::bad_value);
  state_machine z;
  status whole = z.restore(as_span(part_of(x, in_a)));
  ASSERT_FALSE(whole.has_value());
  EXPECT_EQ(whole.err().as<codec_errc>(), codec_errc::bad_value);

  // Part A's blob restored as part B: its streams are outside that part.
  st = y.restore_part(as_span(part_of(x, in_a)), in_b);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.err().as<codec_errc>(), codec_errc::bad_value);
  EXPECT_EQ(y.size(), 0u);

  // A generation that a stream outside the part already has.
  state_machine w;
  ASSERT_EQ(create_at(w, 10, make_create("/b/other", "text/plain", "o")).code, errc::ok);
  const auto before = w.snapshot();
  st = w.restore_part(as_span(part_of(x, in_a)), in_a);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.err().as<codec_errc>(), codec_errc::bad_value);
  EXPECT_EQ(w.snapshot(), before);
}

TEST(snapshot_part, random_mutations_never_crash_and_a_failure_changes_nothing) {
  state_machine x;
  make_rich(x);
  const auto blob = part_of(x, in_a);
  std::mt19937_64 rng(7);
  for (int round = 0; round < 3000; ++round) {
    auto bad = blob;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) bad[rng() % bad.size()] = static_cast<std::byte>(rng());
    state_machine y;
    make_rich(y);
    const auto before = y.snapshot();
    status st = y.restore_part(as_span(bad), in_a);
    if (!st.has_value()) {
      ASSERT_EQ(y.snapshot(), before) << "round " << round;
    } else {
      // Whatever was accepted reads back and writes out again.
      (void)y.snapshot_part(in_a, any_location);
      for (const auto& l : y.forks()) (void)y.read(l.path, std::nullopt, 1 << 20);
    }
  }
}

}  // namespace
}  // namespace weir::streams

namespace weir::streams {
namespace {

using namespace testing;

// A fork's origin (cluster mode: its source's group and the retain's index) is part of the fork's state:
// a node that restores the fork's group from a snapshot still makes the fork's reads wait for its source.
TEST(snapshot_part, a_forks_origin_survives_its_parts_snapshot) {
  state_machine x;
  x.set_next_generation(100);
  ASSERT_EQ(x.create(make_create("/a/src", "text/plain", "abc")).code, errc::ok);
  fork_spec f = resolve_fork(x, "/a/src", std::nullopt);
  f.resolved.origin = fork_origin{7, 1234};
  create_command fc = make_create("/b/fork", "");
  fc.fork = f;
  x.set_next_generation(101);
  ASSERT_EQ(x.create(fc).code, errc::ok);
  fork_spec old = resolve_fork(x, "/a/src", std::nullopt);  // a fork whose create carried no origin
  create_command oc = make_create("/b/old", "");
  oc.fork = old;
  x.set_next_generation(102);
  ASSERT_EQ(x.create(oc).code, errc::ok);
  ASSERT_TRUE(x.fork_wait_of("/b/fork").has_value());
  EXPECT_EQ(x.fork_wait_of("/b/fork")->source, "/a/src");
  EXPECT_FALSE(x.fork_wait_of("/b/old").has_value());
  EXPECT_FALSE(x.fork_wait_of("/a/src").has_value());
  EXPECT_FALSE(x.fork_wait_of("/nope").has_value());

  auto blob = x.snapshot_part([](std::string_view p) { return p.starts_with("/b/"); },
                              [](const disk_location&) { return false; });
  ASSERT_TRUE(blob.has_value()) << blob.err().reason;
  state_machine y;
  ASSERT_TRUE(y.restore_part({blob->data(), blob->size()}, [](std::string_view p) {
                 return p.starts_with("/b/");
               }).has_value());
  auto w = y.fork_wait_of("/b/fork");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->source, "/a/src");
  EXPECT_EQ(w->origin, (fork_origin{7, 1234}));
  EXPECT_FALSE(y.fork_wait_of("/b/old").has_value());
  // The whole-machine checkpoint (single node) keeps its version-3 layout: no origins there.
  state_machine z;
  ASSERT_TRUE(z.restore(x.snapshot()).has_value());
  EXPECT_FALSE(z.fork_wait_of("/b/fork").has_value());
}

}  // namespace
}  // namespace weir::streams

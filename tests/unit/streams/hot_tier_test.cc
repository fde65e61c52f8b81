// The hot tier's side of the state machine: locate, evict, cold forks, referenced segments.
#include <gtest/gtest.h>

#include "streams/state_machine.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

disk_location loc(std::uint64_t segment, std::uint64_t offset, std::uint32_t core = 0,
                  std::uint32_t data_offset = 20) {
  return disk_location{segment, offset, core, data_offset};
}

std::uint64_t generation_of(const state_machine& sm, std::string_view path) {
  read_result r = sm.head(path, t0);
  EXPECT_EQ(r.code, errc::ok);
  return r.meta ? r.meta->generation : 0;
}

TEST(hot_tier, an_evicted_record_reads_back_as_a_cold_slice_with_its_location) {
  state_machine sm;
  (void)sm.create(make_create("/s", "text/plain", "abc"));
  (void)sm.append(make_append("/s", "defg"));
  (void)sm.append(make_append("/s", "hi"));
  const std::uint64_t gen = generation_of(sm, "/s");
  EXPECT_TRUE(sm.locate(gen, 7, loc(3, 500, 0, 21)));
  EXPECT_EQ(sm.evict(gen, 7), 4u);

  read_result r = sm.read("/s", stream_offset(2), 100);
  ASSERT_EQ(r.code, errc::ok);
  ASSERT_EQ(r.plan.slices.size(), 3u);
  EXPECT_EQ(r.plan.slices[0].view(), "c");
  const chunk_slice& cold = r.plan.slices[1];
  EXPECT_TRUE(cold.cold());
  EXPECT_EQ(cold.at, loc(3, 500, 0, 21));
  EXPECT_EQ(cold.begin, 0u);
  EXPECT_EQ(cold.size, 4u);
  EXPECT_EQ(r.plan.slices[2].view(), "hi");
  EXPECT_EQ(r.plan.next.value(), 9u);

  r = sm.read("/s", stream_offset(5), 100);  // from inside the cold record
  ASSERT_EQ(r.plan.slices.size(), 2u);
  EXPECT_TRUE(r.plan.slices[0].cold());
  EXPECT_EQ(r.plan.slices[0].begin, 2u);
  EXPECT_EQ(r.plan.slices[0].size, 2u);
}

TEST(hot_tier, a_located_record_stays_hot_until_evicted) {
  state_machine sm;
  (void)sm.create(make_create("/s", "text/plain", "abc"));
  const std::uint64_t gen = generation_of(sm, "/s");
  ASSERT_TRUE(sm.locate(gen, 3, loc(1, 40)));
  read_result r = sm.read("/s", std::nullopt, 100);
  ASSERT_EQ(r.plan.slices.size(), 1u);
  EXPECT_FALSE(r.plan.slices[0].cold());
  EXPECT_EQ(r.plan.slices[0].view(), "abc");
  EXPECT_EQ(r.plan.slices[0].at, loc(1, 40));
}

TEST(hot_tier, a_reader_in_flight_keeps_the_evicted_bytes) {
  state_machine sm;
  (void)sm.create(make_create("/s", "text/plain", "abc"));
  const std::uint64_t gen = generation_of(sm, "/s");
  read_result before = sm.read("/s", std::nullopt, 100);
  ASSERT_TRUE(sm.locate(gen, 3, loc(1, 40)));
  EXPECT_EQ(sm.evict(gen, 3), 3u);
  EXPECT_EQ(before.plan.slices[0].view(), "abc");
  EXPECT_TRUE(sm.read("/s", std::nullopt, 100).plan.slices[0].cold());
}

TEST(hot_tier, evict_releases_nothing_for_unlocated_missing_or_already_cold_records) {
  state_machine sm;
  (void)sm.create(make_create("/s", "text/plain", "abc"));
  (void)sm.append(make_append("/s", "de"));
  const std::uint64_t gen = generation_of(sm, "/s");
  EXPECT_EQ(sm.evict(gen, 3), 0u);  // not located
  EXPECT_FALSE(sm.read("/s", std::nullopt, 100).plan.slices[0].cold());
  EXPECT_EQ(sm.evict(gen, 4), 0u);        // no record ends there
  EXPECT_EQ(sm.evict(gen + 100, 3), 0u);  // no such stream
  ASSERT_TRUE(sm.locate(gen, 5, loc(2, 8)));
  EXPECT_EQ(sm.evict(gen + 1, 5), 0u);  // another generation
  EXPECT_EQ(sm.evict(gen, 5), 2u);
  EXPECT_EQ(sm.evict(gen, 5), 0u);  // already cold
}

TEST(hot_tier, locate_fails_for_a_deleted_or_recreated_stream_or_a_wrong_end) {
  state_machine sm;
  (void)sm.create(make_create("/s", "text/plain", "abc"));
  const std::uint64_t old_gen = generation_of(sm, "/s");
  EXPECT_FALSE(sm.locate(old_gen, 2, loc(1, 0)));        // not a record end
  EXPECT_FALSE(sm.locate(old_gen + 100, 3, loc(1, 0)));  // no such stream
  (void)sm.remove(delete_command{"/s", t0});
  EXPECT_FALSE(sm.locate(old_gen, 3, loc(1, 0)));
  (void)sm.create(make_create("/s", "text/plain", "xyz"));
  const std::uint64_t new_gen = generation_of(sm, "/s");
  ASSERT_NE(new_gen, old_gen);
  EXPECT_FALSE(sm.locate(old_gen, 3, loc(1, 0)));
  EXPECT_TRUE(sm.locate(new_gen, 3, loc(1, 0)));
}

TEST(hot_tier, a_fork_reads_its_inherited_records_as_the_source_holds_them) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  (void)sm.append(make_append("/src", "defg"));
  const std::uint64_t gen = generation_of(sm, "/src");
  ASSERT_TRUE(sm.locate(gen, 3, loc(5, 100)));  // located, still hot in the source
  create_command c = make_create("/fork", "");
  c.fork = resolve_fork(sm, "/src", 5);  // inherits "abc" and "de" of "defg"
  ASSERT_EQ(sm.create(c).code, errc::ok);

  // While the source holds the bytes, the fork reads them from memory too (no disk read).
  read_result fork = sm.read("/fork", std::nullopt, 100);
  ASSERT_EQ(fork.plan.slices.size(), 2u);
  EXPECT_FALSE(fork.plan.slices[0].cold());
  EXPECT_EQ(fork.plan.slices[0].view(), "abc");
  EXPECT_EQ(fork.plan.slices[1].view(), "de");

  // Once the source evicts them, the fork does not keep them in memory: it reads them cold.
  EXPECT_EQ(sm.evict(gen, 3), 3u);
  fork = sm.read("/fork", std::nullopt, 100);
  ASSERT_EQ(fork.plan.slices.size(), 2u);
  EXPECT_TRUE(fork.plan.slices[0].cold());
  EXPECT_EQ(fork.plan.slices[0].at, loc(5, 100));
  EXPECT_EQ(fork.plan.slices[0].size, 3u);
  EXPECT_FALSE(fork.plan.slices[1].cold());  // no location yet: the bytes stay in memory
  EXPECT_EQ(fork.plan.slices[1].view(), "de");
  EXPECT_EQ(sm.records_held("/fork"), 0u);
}

TEST(hot_tier, a_replayed_fork_is_marked_until_stitched_and_then_reads_its_source) {
  state_machine sm;
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  (void)sm.append(make_append("/src", "de"));
  const std::uint64_t gen = generation_of(sm, "/src");
  ASSERT_TRUE(sm.locate(gen, 3, loc(7, 0)));
  ASSERT_EQ(sm.evict(gen, 3), 3u);
  create_command c = make_create("/fork", "", "XY");
  c.fork = resolve_fork(sm, "/src", std::nullopt);
  c.fork->resolved.source_log.reset();  // what log replay sees: no link to the source
  ASSERT_EQ(sm.create(c).code, errc::ok);
  create_command at_zero = make_create("/fork0", "");
  at_zero.fork = resolve_fork(sm, "/src", 0);  // nothing to inherit: not marked
  ASSERT_EQ(sm.create(at_zero).code, errc::ok);

  auto marked = sm.forks_to_stitch();
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_EQ(marked[0].path, "/fork");
  EXPECT_EQ(marked[0].source, "/src");
  EXPECT_EQ(marked[0].point.value(), 5u);
  EXPECT_EQ(sm.forks().size(), 2u);  // forks() still lists every fork
  // Unlinked, a read skips to the fork's own records (nothing is invented).
  read_result unlinked = sm.read("/fork", std::nullopt, 100);
  ASSERT_EQ(unlinked.plan.slices.size(), 1u);
  EXPECT_EQ(unlinked.plan.slices[0].view(), "XY");

  sm.stitch_fork("/fork", sm.log_of("/src"));
  EXPECT_TRUE(sm.forks_to_stitch().empty());
  EXPECT_EQ(sm.forks().size(), 2u);
  read_result fork = sm.read("/fork", std::nullopt, 100);
  ASSERT_EQ(fork.plan.slices.size(), 3u);
  EXPECT_TRUE(fork.plan.slices[0].cold());
  EXPECT_EQ(fork.plan.slices[0].at, loc(7, 0));
  EXPECT_EQ(fork.plan.slices[1].view(), "de");
  EXPECT_EQ(fork.plan.slices[2].view(), "XY");
}

TEST(hot_tier, referenced_segments_cover_each_core_s_own_records_and_a_soft_deleted_source_s) {
  state_machine src_core;   // core 0
  state_machine fork_core;  // core 1
  (void)src_core.create(make_create("/src", "text/plain", "abc"));
  (void)src_core.append(make_append("/src", "de"));
  (void)src_core.append(make_append("/src", "fgh"));
  const std::uint64_t gen = generation_of(src_core, "/src");
  ASSERT_TRUE(src_core.locate(gen, 3, loc(2, 0, 0)));
  ASSERT_TRUE(src_core.locate(gen, 5, loc(4, 0, 0)));
  ASSERT_TRUE(src_core.locate(gen, 8, loc(6, 0, 0)));
  EXPECT_EQ(src_core.referenced_segments(0), (std::vector<std::uint64_t>{2, 4, 6}));
  EXPECT_TRUE(src_core.referenced_segments(1).empty());

  create_command c = make_create("/fork", "", "XY");
  c.fork = resolve_fork(src_core, "/src", 5);
  ASSERT_EQ(fork_core.create(c).code, errc::ok);
  const std::uint64_t fork_gen = generation_of(fork_core, "/fork");
  ASSERT_TRUE(fork_core.locate(fork_gen, 7, loc(9, 0, 1)));
  // The fork's inherited records are the source's: the source's core lists their segments.
  EXPECT_TRUE(fork_core.referenced_segments(0).empty());
  EXPECT_EQ(fork_core.referenced_segments(1), (std::vector<std::uint64_t>{9}));

  // The source, deleted while the fork references it, is soft-deleted and keeps its records (and so
  // its segments) until the fork's reference is released.
  outcome del = src_core.remove(delete_command{"/src", t0});
  ASSERT_EQ(del.code, errc::ok);
  EXPECT_EQ(src_core.head("/src", t0).code, errc::gone);
  EXPECT_EQ(src_core.referenced_segments(0), (std::vector<std::uint64_t>{2, 4, 6}));
  (void)src_core.fork_release(fork_release_command{"/src"});
  EXPECT_TRUE(src_core.referenced_segments(0).empty());
}

TEST(hot_tier, removals_count_erased_streams_and_holds_generation_follows_them) {
  state_machine sm;
  (void)sm.create(make_create("/a", "text/plain", "abc"));
  (void)sm.create(make_create("/src", "text/plain", "abc"));
  const std::uint64_t a = generation_of(sm, "/a");
  const std::uint64_t src = generation_of(sm, "/src");
  create_command c = make_create("/fork", "");
  c.fork = resolve_fork(sm, "/src", 3);
  ASSERT_EQ(sm.create(c).code, errc::ok);
  EXPECT_EQ(sm.removals(), 0u);
  EXPECT_TRUE(sm.holds_generation(a));

  (void)sm.remove(delete_command{"/src", t0});  // soft-deleted: its records stay, so does its generation
  EXPECT_EQ(sm.removals(), 0u);
  EXPECT_TRUE(sm.holds_generation(src));
  (void)sm.remove(delete_command{"/a", t0});
  EXPECT_EQ(sm.removals(), 1u);
  EXPECT_FALSE(sm.holds_generation(a));
  (void)sm.fork_release(fork_release_command{"/src"});
  EXPECT_EQ(sm.removals(), 2u);
  EXPECT_FALSE(sm.holds_generation(src));
}

}  // namespace
}  // namespace weir::streams

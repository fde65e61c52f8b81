// state_machine::snapshot_part / restore_part / expand_snapshot_part: one part of a machine (a cluster's
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

}  // namespace
}  // namespace weir::streams

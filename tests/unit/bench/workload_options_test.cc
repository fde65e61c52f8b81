#include "bench/workload_options.h"

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(workload_options, parses_workload_lists_and_all) {
  auto w = parse_workloads("many-streams,fanout");
  ASSERT_TRUE(w.has_value()) << w.err().reason;
  EXPECT_EQ(*w, (std::vector<workload>{workload::many_streams, workload::fanout}));
  auto all = parse_workloads("all");
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->size(), 4u);
  EXPECT_EQ(std::string(workload_name(all->back())), "soak");
  auto sat = parse_workloads("saturation");  // by name only: "all" is bench/compare's side-by-side set
  ASSERT_TRUE(sat.has_value());
  EXPECT_EQ(*sat, std::vector<workload>{workload::saturation});
  auto seed = parse_workloads("seed");
  ASSERT_TRUE(seed.has_value());
  EXPECT_EQ(*seed, std::vector<workload>{workload::seed});
}

TEST(workload_options, rejects_unknown_repeated_and_empty_workloads) {
  EXPECT_FALSE(parse_workloads("").has_value());
  EXPECT_FALSE(parse_workloads("fan-out").has_value());
  EXPECT_FALSE(parse_workloads("soak,soak").has_value());
  auto e = parse_workloads("seed,bogus");
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.err().reason.find("bogus"), std::string::npos) << e.err().reason;
}

TEST(workload_options, levels_must_be_positive_increasing_and_bounded) {
  auto l = parse_levels("100,500,2000", "--streams");
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(*l, (std::vector<unsigned>{100, 500, 2000}));
  EXPECT_FALSE(parse_levels("", "--streams").has_value());
  EXPECT_FALSE(parse_levels("0,5", "--streams").has_value());
  EXPECT_FALSE(parse_levels("5,5", "--streams").has_value());
  EXPECT_FALSE(parse_levels("10,5", "--streams").has_value());
  EXPECT_FALSE(parse_levels("1x", "--streams").has_value());
  EXPECT_FALSE(parse_levels("-1", "--streams").has_value());
  EXPECT_TRUE(parse_levels("50000", "--subscribers", 50'000).has_value());
  auto over = parse_levels("50001", "--subscribers", 50'000);
  ASSERT_FALSE(over.has_value());
  EXPECT_NE(over.err().reason.find("--subscribers"), std::string::npos);
}

TEST(workload_options, server_pid_and_info_pairs) {
  auto p = parse_server_pid("weir=1234");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->first, "weir");
  EXPECT_EQ(p->second, std::vector<int>{1234});
  auto cluster = parse_server_pid("c=11,12,13");
  ASSERT_TRUE(cluster.has_value());
  EXPECT_EQ(cluster->second, (std::vector<int>{11, 12, 13}));
  EXPECT_FALSE(parse_server_pid("c=11,,13").has_value());
  EXPECT_FALSE(parse_server_pid("c=11,").has_value());
  EXPECT_FALSE(parse_server_pid("weir").has_value());
  EXPECT_FALSE(parse_server_pid("=12").has_value());
  EXPECT_FALSE(parse_server_pid("weir=0").has_value());
  EXPECT_FALSE(parse_server_pid("weir=12a").has_value());
  auto i = parse_info("node=v20 (a=b)");
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->first, "node");
  EXPECT_EQ(i->second, "v20 (a=b)");
  EXPECT_FALSE(parse_info("novalue").has_value());
}

TEST(workload_options, validate_checks_each_workload_range) {
  workload_options w;
  EXPECT_TRUE(validate(w).has_value());
  auto broken = [&](auto change) {
    workload_options c;
    c.workloads = {workload::seed, workload::many_streams, workload::fanout, workload::soak,
                   workload::saturation};
    change(c);
    return !validate(c).has_value();
  };
  EXPECT_TRUE(broken([](workload_options& c) { c.writers = 0; }));
  EXPECT_TRUE(broken([](workload_options& c) { c.append_bytes = 16; }));  // fanout needs the tag
  EXPECT_TRUE(broken([](workload_options& c) { c.fanout_rate = 0; }));
  EXPECT_TRUE(broken([](workload_options& c) { c.fanout_events = 0; }));
  EXPECT_TRUE(broken([](workload_options& c) { c.soak_sample_secs = 0.5; }));
  EXPECT_TRUE(broken([](workload_options& c) {
    c.soak_secs = 5;
    c.soak_sample_secs = 10;
  }));
  EXPECT_TRUE(broken([](workload_options& c) { c.soak_stream_appends = 0; }));
  EXPECT_TRUE(broken([](workload_options& c) { c.sat_secs = 0; }));
  EXPECT_TRUE(broken([](workload_options& c) { c.sat_plateau = -0.1; }));
  EXPECT_TRUE(broken([](workload_options& c) { c.sat_connections.clear(); }));
  EXPECT_FALSE(broken([](workload_options&) {}));
  // Without fanout a 16-byte append is fine.
  workload_options small;
  small.workloads = {workload::many_streams};
  small.append_bytes = 16;
  EXPECT_TRUE(validate(small).has_value());
}

}  // namespace
}  // namespace weir::bench

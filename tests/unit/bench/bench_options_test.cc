#include "bench/bench_options.h"

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(bench_options, parses_a_target_url_with_and_without_a_path) {
  auto t = parse_target("weir=http://127.0.0.1:4437");
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->name, "weir");
  ASSERT_EQ(t->bases.size(), 1u);
  EXPECT_EQ(t->base(0).host, "127.0.0.1");
  EXPECT_EQ(t->base(0).port, 4437);
  EXPECT_EQ(t->base(0).prefix, "/v1/stream");
  EXPECT_EQ(t->base(7).port, 4437);  // every connection goes to the one base
  EXPECT_EQ(t->read_base(3).port, 4437);
  auto p = parse_endpoint("http://localhost/streams/");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->host, "127.0.0.1");
  EXPECT_EQ(p->port, 80);
  EXPECT_EQ(p->prefix, "/streams");
}

TEST(bench_options, rejects_bad_urls_and_targets) {
  EXPECT_FALSE(parse_endpoint("https://127.0.0.1:1").has_value());
  EXPECT_FALSE(parse_endpoint("http://127.0.0.1:0").has_value());
  EXPECT_FALSE(parse_endpoint("http://127.0.0.1:70000").has_value());
  EXPECT_FALSE(parse_endpoint("http://example.com:80").has_value());
  EXPECT_FALSE(parse_endpoint("http://127.0.0.1:80/a?b").has_value());
  EXPECT_FALSE(parse_target("http://127.0.0.1:1").has_value());
  EXPECT_FALSE(parse_target("=http://127.0.0.1:1").has_value());
  EXPECT_FALSE(parse_target("a=").has_value());
  EXPECT_FALSE(parse_target("a=http://127.0.0.1:1,,http://127.0.0.1:2").has_value());
  EXPECT_FALSE(parse_target("a=http://127.0.0.1:1,https://127.0.0.1:2").has_value());
}

TEST(bench_options, a_target_with_several_bases_spreads_connections_round_robin) {
  auto t = parse_target("cluster=http://127.0.0.1:4437,http://127.0.0.1:4438/x,http://127.0.0.1:4439");
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->name, "cluster");
  ASSERT_EQ(t->bases.size(), 3u);
  EXPECT_EQ(t->bases[1].prefix, "/x");
  const std::uint16_t expected[] = {4437, 4438, 4439, 4437, 4438, 4439, 4437};
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_EQ(t->base(i).port, expected[i]) << "connection " << i;
    EXPECT_EQ(t->read_base(i).port, expected[i]) << "reads follow the bases unless --read-bases";
  }
  EXPECT_EQ(t->urls(), "http://127.0.0.1:4437,http://127.0.0.1:4438/x,http://127.0.0.1:4439");
  std::vector<target_spec> targets{*t};
  ASSERT_TRUE(apply_read_bases("cluster=http://127.0.0.1:5000,http://127.0.0.1:5001", targets).has_value());
  EXPECT_EQ(targets[0].base(1).port, 4438);  // writes keep their bases
  EXPECT_EQ(targets[0].read_base(0).port, 5000);
  EXPECT_EQ(targets[0].read_base(1).port, 5001);
  EXPECT_EQ(targets[0].read_base(2).port, 5000);
}

TEST(bench_options, read_bases_attach_to_the_named_target) {
  std::vector<target_spec> targets{*parse_target("a=http://127.0.0.1:1"),
                                   *parse_target("b=http://127.0.0.1:2")};
  ASSERT_TRUE(apply_read_bases("b=http://127.0.0.1:3,http://127.0.0.1:4/x", targets).has_value());
  EXPECT_TRUE(targets[0].read_bases.empty());
  ASSERT_EQ(targets[1].read_bases.size(), 2u);
  EXPECT_EQ(targets[1].read_bases[1].port, 4);
  EXPECT_EQ(targets[1].read_bases[1].prefix, "/x");
  EXPECT_FALSE(apply_read_bases("c=http://127.0.0.1:3", targets).has_value());
  EXPECT_FALSE(apply_read_bases("b=", targets).has_value());
}

TEST(bench_options, concurrency_levels_must_be_positive_and_increasing) {
  auto c = parse_concurrency("4,8,16,32,64,128,256");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (std::vector<unsigned>{4, 8, 16, 32, 64, 128, 256}));
  EXPECT_FALSE(parse_concurrency("").has_value());
  EXPECT_FALSE(parse_concurrency("0").has_value());
  EXPECT_FALSE(parse_concurrency("8,4").has_value());
  EXPECT_FALSE(parse_concurrency("4,,8").has_value());
  EXPECT_FALSE(parse_concurrency("4x").has_value());
}

TEST(bench_options, validate_requires_a_target_and_sane_sizes) {
  bench_options o;
  EXPECT_FALSE(validate(o).has_value());
  o.targets.push_back(*parse_target("a=http://127.0.0.1:1"));
  EXPECT_TRUE(validate(o).has_value());
  o.targets.push_back(*parse_target("a=http://127.0.0.1:2"));
  EXPECT_FALSE(validate(o).has_value());
  o.targets.pop_back();
  o.sse_payload_bytes = 8;
  EXPECT_FALSE(validate(o).has_value());
  o.sse_payload_bytes = 512;
  o.throughput_secs = 0;
  EXPECT_FALSE(validate(o).has_value());
}

// A redis:// target is a Redis server: only the saturation workload speaks its protocol (XADD).
TEST(bench_options, a_redis_target_is_driven_by_the_saturation_workload_only) {
  auto t = parse_target("redis=redis://127.0.0.1:6379");
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_TRUE(t->redis);
  EXPECT_EQ(t->base(0).port, 6379);
  EXPECT_EQ(t->urls(), "redis://127.0.0.1:6379");
  EXPECT_FALSE(parse_target("weir=http://127.0.0.1:1")->redis);
  EXPECT_FALSE(parse_target("mixed=redis://127.0.0.1:1,http://127.0.0.1:2").has_value());
  bench_options o;
  o.targets.push_back(*t);
  EXPECT_FALSE(validate(o).has_value());  // the default workload is seed
  o.work.workloads = {workload::saturation};
  EXPECT_TRUE(validate(o).has_value());
}

}  // namespace
}  // namespace weir::bench

#include "bench/bench_options.h"

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(bench_options, parses_a_target_url_with_and_without_a_path) {
  auto t = parse_target("weir=http://127.0.0.1:4437");
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->name, "weir");
  EXPECT_EQ(t->write.host, "127.0.0.1");
  EXPECT_EQ(t->write.port, 4437);
  EXPECT_EQ(t->write.prefix, "/v1/stream");
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

}  // namespace
}  // namespace weir::bench

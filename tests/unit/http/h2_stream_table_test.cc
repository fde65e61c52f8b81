// h2_stream_table against std::map: rising odd ids as a client opens them, closed in any order, ids
// spaced to collide, and growth; every stream stays findable until taken and is found nowhere after.
#include "http/h2_stream_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace weir::http {
namespace {

struct item {
  std::int32_t id = 0;
};

void check_same(const h2_stream_table<item>& t, const std::map<std::int32_t, item*>& model,
                std::int32_t max_id) {
  ASSERT_EQ(t.size(), model.size());
  for (std::int32_t id = 1; id <= max_id + 64; id += 2) {
    auto it = model.find(id);
    EXPECT_EQ(t.find(id), it == model.end() ? nullptr : it->second) << id;
  }
  std::size_t seen = 0;
  t.for_each([&](const item& i) {
    ++seen;
    EXPECT_TRUE(model.count(i.id)) << i.id;
  });
  EXPECT_EQ(seen, model.size());
}

TEST(h2_stream_table, matches_a_map_under_random_opens_and_closes) {
  for (std::int32_t spacing : {2, 32, 64, 256}) {  // 2: a client's ids; the others collide in small tables
    h2_stream_table<item> t;
    std::map<std::int32_t, item*> model;
    std::mt19937 rng(static_cast<std::uint32_t>(spacing));
    std::int32_t next = 1;
    for (int step = 0; step < 4000; ++step) {
      const bool open = model.empty() || (model.size() < 300 && rng() % 100 < 55);
      if (open) {
        auto s = std::make_unique<item>();
        s->id = next;
        next += spacing;
        model[s->id] = s.get();
        t.insert(std::move(s));
      } else {
        auto it = model.begin();
        std::advance(it, static_cast<long>(rng() % model.size()));
        const std::int32_t id = it->first;
        std::unique_ptr<item> taken = t.take(id);
        ASSERT_NE(taken, nullptr) << id;
        EXPECT_EQ(taken.get(), it->second);
        model.erase(it);
        EXPECT_EQ(t.take(id), nullptr);
      }
      if (step % 200 == 0) check_same(t, model, next);
    }
    check_same(t, model, next);
    t.clear();
    EXPECT_TRUE(t.empty());
    EXPECT_EQ(t.find(1), nullptr);
    EXPECT_EQ(t.take(1), nullptr);
  }
}

TEST(h2_stream_table, an_empty_table_finds_nothing) {
  h2_stream_table<item> t;
  EXPECT_EQ(t.find(1), nullptr);
  EXPECT_EQ(t.take(1), nullptr);
  EXPECT_FALSE(t.any([](const item&) { return true; }));
}

}  // namespace
}  // namespace weir::http

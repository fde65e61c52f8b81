// The nghttp2 allocator (h2_alloc): nghttp2_mem's contract (malloc, calloc zeroed, realloc keeping the
// bytes, free of null), reuse of a freed block of the same class, and lists freed when a thread ends.
#include "http/h2_alloc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace weir::http {
namespace {

TEST(h2_alloc, follows_the_nghttp2_mem_contract) {
  nghttp2_mem* m = h2_mem();
  for (std::size_t size : {0, 1, 47, 48, 49, 500, 1008, 1009, 5000, 70000}) {
    auto* p = static_cast<unsigned char*>(m->malloc(size, m->mem_user_data));
    ASSERT_NE(p, nullptr) << size;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u) << size;
    std::memset(p, 0xab, size);
    // Growing keeps the bytes, whether the block's class holds the new size or not.
    auto* q = static_cast<unsigned char*>(m->realloc(p, size * 3 + 10, m->mem_user_data));
    ASSERT_NE(q, nullptr) << size;
    for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(q[i], 0xab) << size << " at " << i;
    m->free(q, m->mem_user_data);
  }
  auto* z = static_cast<unsigned char*>(m->calloc(10, 30, m->mem_user_data));
  ASSERT_NE(z, nullptr);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(z[i], 0) << i;
  m->free(z, m->mem_user_data);
  EXPECT_EQ(m->calloc(SIZE_MAX / 2, 4, m->mem_user_data), nullptr);  // n * size overflows
  m->free(nullptr, m->mem_user_data);
  void* r = m->realloc(nullptr, 100, m->mem_user_data);  // like malloc
  EXPECT_NE(r, nullptr);
  m->free(r, m->mem_user_data);
}

TEST(h2_alloc, a_freed_block_is_reused_by_the_next_of_its_class) {
  nghttp2_mem* m = h2_mem();
  void* a = m->malloc(200, m->mem_user_data);
  m->free(a, m->mem_user_data);
  void* b = m->malloc(180, m->mem_user_data);
  if (h2_mem_keeps_blocks()) {
    EXPECT_EQ(a, b);
  }
  m->free(b, m->mem_user_data);
}

TEST(h2_alloc, blocks_cross_threads_and_lists_end_with_their_thread) {
  nghttp2_mem* m = h2_mem();
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(m->malloc(100 + i % 300, m->mem_user_data));
  // Freed on another thread, which then ends: its lists (bounded) are freed, the rest went to free().
  std::thread t([&] {
    for (void* p : blocks) m->free(p, m->mem_user_data);
    void* again = m->malloc(150, m->mem_user_data);
    EXPECT_NE(again, nullptr);
    m->free(again, m->mem_user_data);
  });
  t.join();
  void* mine = m->malloc(150, m->mem_user_data);
  EXPECT_NE(mine, nullptr);
  m->free(mine, m->mem_user_data);
}

}  // namespace
}  // namespace weir::http

#include "io/byte_buffer.h"

#include <gtest/gtest.h>

#include <string>

namespace weir::io {
namespace {

TEST(byte_buffer, append_consume_and_view) {
  byte_buffer b;
  EXPECT_TRUE(b.empty());
  b.append("hello ");
  b.append("world");
  EXPECT_EQ(b.view(), "hello world");
  b.consume(6);
  EXPECT_EQ(b.view(), "world");
  b.consume(5);
  EXPECT_TRUE(b.empty());
}

TEST(byte_buffer, grows_and_keeps_bytes_across_reallocation) {
  byte_buffer b;
  std::string expect;
  for (int i = 0; i < 1000; ++i) {
    std::string piece = std::to_string(i) + ",";
    b.append(piece);
    expect += piece;
  }
  EXPECT_EQ(b.view(), expect);
  EXPECT_GE(b.capacity(), expect.size());
}

TEST(byte_buffer, prepare_and_commit_write_in_place) {
  byte_buffer b;
  char* p = b.prepare(100);
  std::memcpy(p, "abc", 3);
  b.commit(3);
  EXPECT_EQ(b.view(), "abc");
  EXPECT_GE(b.writable(), 97u);
}

TEST(byte_buffer, prepare_compacts_consumed_space_before_growing) {
  byte_buffer b;
  b.append(std::string(1000, 'x'));
  std::size_t cap = b.capacity();
  b.consume(990);
  b.prepare(cap - 20);  // fits once the 990 consumed bytes are reclaimed
  EXPECT_EQ(b.capacity(), cap);
  EXPECT_EQ(b.view(), std::string(10, 'x'));
}

TEST(byte_buffer, erase_removes_a_middle_range) {
  byte_buffer b;
  b.append("HEAD|framing|tail");
  b.erase(4, 8);
  EXPECT_EQ(b.view(), "HEAD|tail");
}

TEST(byte_buffer, release_frees_memory) {
  byte_buffer b;
  b.append("x");
  b.consume(1);
  b.release();
  EXPECT_EQ(b.capacity(), 0u);
  b.append("again");
  EXPECT_EQ(b.view(), "again");
}

TEST(byte_buffer, move_assignment_takes_the_bytes_and_frees_its_own) {
  byte_buffer a;
  a.append("abcdef");
  a.consume(2);
  byte_buffer b;
  b.append(std::string(10'000, 'x'));
  b = std::move(a);
  EXPECT_EQ(b.view(), "cdef");
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_TRUE(a.empty());
  a.append("reused");
  EXPECT_EQ(a.view(), "reused");
}

}  // namespace
}  // namespace weir::io

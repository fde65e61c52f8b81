#include "cluster/incarnation_book.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/mem_env.h"

namespace weir::cluster {
namespace {

const std::string dir = "/data/node-1";
const std::string path = dir + "/incarnations";
using verdict = incarnation_book::verdict;

void put(storage::mem_env& e, const std::string& p, const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  e.set_contents(p, std::move(bytes));
}

incarnation_book open(storage::mem_env& e) {
  auto b = incarnation_book::open(e, dir);
  EXPECT_TRUE(b) << b.err().reason;
  return std::move(*b);
}

TEST(incarnation_book, records_the_first_incarnation_of_each_id_and_refuses_another) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  incarnation_book book = open(e);
  EXPECT_TRUE(book.entries().empty());
  EXPECT_FALSE(e.file_exists(path));  // nothing written until a peer is seen
  EXPECT_EQ(*book.judge(2, 500), verdict::recorded);
  EXPECT_EQ(*book.judge(3, 700), verdict::recorded);
  EXPECT_EQ(*book.judge(2, 500), verdict::known);  // a restart on its own directory
  EXPECT_EQ(*book.judge(2, 501), verdict::other);  // a new directory under id 2
  EXPECT_EQ(book.find(2), 500u);                   // a refused one changes nothing
  EXPECT_EQ(*book.judge(4, 0), verdict::known);    // no incarnation: nothing to check or keep
  EXPECT_FALSE(book.find(4));
}

TEST(incarnation_book, survives_a_crash_and_a_restart) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  {
    incarnation_book book = open(e);
    ASSERT_EQ(*book.judge(2, 500), verdict::recorded);
    ASSERT_EQ(*book.judge(3, 700), verdict::recorded);
  }
  e.crash();  // recorded means durable
  e.restart();
  incarnation_book book = open(e);
  EXPECT_EQ(book.entries(), (std::map<std::uint64_t, std::uint64_t>{{2, 500}, {3, 700}}));
  EXPECT_EQ(*book.judge(3, 701), verdict::other);
}

// A member removed through the membership API is forgotten: the same id on a new directory (joining
// again) is then recorded anew.
TEST(incarnation_book, forgets_a_removed_member) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  incarnation_book book = open(e);
  ASSERT_EQ(*book.judge(3, 700), verdict::recorded);
  ASSERT_TRUE(book.forget(3));
  ASSERT_TRUE(book.forget(9));  // never seen: nothing to do
  e.crash();
  e.restart();
  incarnation_book again = open(e);
  EXPECT_FALSE(again.find(3));
  EXPECT_EQ(*again.judge(3, 800), verdict::recorded);
}

TEST(incarnation_book, a_failed_write_records_nothing) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  incarnation_book book = open(e);
  e.fail_next_syncs(1);
  auto v = book.judge(2, 500);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.err().as<incarnation_errc>(), incarnation_errc::io_error);
  EXPECT_FALSE(book.find(2));
  EXPECT_EQ(*book.judge(2, 500), verdict::recorded);  // the next hello tries again
}

TEST(incarnation_book, format_and_parse_agree_and_a_damaged_file_is_an_error) {
  const std::map<std::uint64_t, std::uint64_t> m{{1, 1}, {7, ~0ull}, {1ull << 40, 12345}};
  auto back = incarnation_book::parse(incarnation_book::format(m));
  ASSERT_TRUE(back) << back.err().reason;
  EXPECT_EQ(*back, m);
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  for (const char* text : {"node-2 = 0\n", "node-0 = 5\n", "node-x = 5\n", "peer-2 = 5\n",
                           "node-2 = 5\nnode-2 = 6\n", "node-2 5\n", "node-2 = -1\n"}) {
    put(e, path, text);
    auto b = incarnation_book::open(e, dir);
    ASSERT_FALSE(b) << text;
    EXPECT_EQ(b.err().as<incarnation_errc>(), incarnation_errc::corrupt) << text;
  }
}

}  // namespace
}  // namespace weir::cluster

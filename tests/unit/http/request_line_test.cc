// Tests for the request-line readers: the fast one takes the common shapes, and whenever it accepts
// a line the general one accepts it with the same fields (also at every line cap and every length).
#include "http/request_line.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace weir::http::detail {
namespace {

// Both readers on s[0..room) at this cap; fails the test if the fast one accepts what the general
// one does not, or with other fields. Returns whether the fast one accepted.
bool fast_agrees(const std::string& s, std::size_t room, std::size_t line_cap) {
  request_line fast;
  if (!read_request_line_fast(s.data(), room, line_cap, fast)) return false;
  request_line general;
  const request_line_status st = read_request_line(s.data(), room, line_cap, general);
  EXPECT_EQ(st.status, parse_status::complete) << s << " room " << room << " cap " << line_cap;
  EXPECT_EQ(fast.method, general.method) << s;
  EXPECT_EQ(fast.method_name, general.method_name) << s;
  EXPECT_EQ(fast.target, general.target) << s;
  EXPECT_EQ(fast.question, general.question) << s;
  EXPECT_EQ(fast.version_minor, general.version_minor) << s;
  EXPECT_EQ(fast.next, general.next) << s;
  return true;
}

const std::vector<std::string>& lines() {
  static const std::vector<std::string> v = {
      "GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET / HTTP/1.0\r\n",
      "POST /v1/stream/a?offset=-1&live=sse HTTP/1.1\r\n",
      "GET /a?b?c HTTP/1.1\r\n",
      "GET /0123456789abcdef0123456789abcdef?q=0123456789abcdef HTTP/1.1\r\n",
      "DELETE /s HTTP/1.1\r\n",
      "OPTIONS * HTTP/1.1\r\n",
      "GET http://h/p?q HTTP/1.1\r\n",
      "M-SEARCH * HTTP/1.1\r\n",
      "get / HTTP/1.1\r\n",
      "GET / HTTP/1.2\r\n",
      "GET / HTTP/2.0\r\n",
      "GET / HTTP/1.1\n",
      "GET  / HTTP/1.1\r\n",
      "GET / HTTP/1.1 \r\n",
      "GET /\x7f HTTP/1.1\r\n",
      "GET /\xc3\xa9 HTTP/1.1\r\n",
      "GET / http/1.1\r\n",
      "GET\t/ HTTP/1.1\r\n",
      " GET / HTTP/1.1\r\n",
      "GET / HTTP/1.1\r\r\n",
  };
  return v;
}

TEST(request_line, fast_reader_takes_the_common_shapes) {
  request_line rl;
  const std::string get = "GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(read_request_line_fast(get.data(), get.size(), 8194, rl));
  EXPECT_EQ(rl.method, method::get);
  EXPECT_EQ(rl.target, "/plaintext");
  EXPECT_EQ(rl.question, nullptr);
  EXPECT_EQ(rl.version_minor, 1);
  EXPECT_EQ(rl.next, get.data() + 25);

  const std::string post = "POST /v1/stream/a?offset=-1 HTTP/1.0\r\n";
  ASSERT_TRUE(read_request_line_fast(post.data(), post.size(), 8194, rl));
  EXPECT_EQ(rl.method, method::post);
  EXPECT_EQ(rl.target, "/v1/stream/a?offset=-1");
  EXPECT_EQ(rl.question, post.data() + 17);
  EXPECT_EQ(rl.version_minor, 0);
}

TEST(request_line, fast_reader_leaves_everything_else_to_the_general_one) {
  request_line rl;
  for (const char* s : {"GET / HTTP/1.2\r\n", "GET / HTTP/2.0\r\n", "GET / HTTP/1.1\n", "GET  / HTTP/1.1\r\n",
                        "GET /\x7f HTTP/1.1\r\n", "GET / http/1.1\r\n", "GET / HTTP/1.1\r", ""}) {
    const std::string line = s;
    EXPECT_FALSE(read_request_line_fast(line.data(), line.size(), 8194, rl)) << line;
  }
  // Exactly at the cap (line + CRLF == cap) it is taken; one byte less is for the general reader (414).
  const std::string at_cap = "GET /abc HTTP/1.1\r\n";
  EXPECT_TRUE(read_request_line_fast(at_cap.data(), at_cap.size(), at_cap.size(), rl));
  EXPECT_FALSE(read_request_line_fast(at_cap.data(), at_cap.size(), at_cap.size() - 1, rl));
}

TEST(request_line, fast_and_general_agree_at_every_length_and_cap) {
  std::size_t accepted = 0;
  for (const std::string& s : lines()) {
    for (std::size_t room = 1; room <= s.size(); ++room) {
      for (std::size_t cap = 1; cap <= s.size() + 2; ++cap) accepted += fast_agrees(s, room, cap) ? 1 : 0;
    }
  }
  EXPECT_GT(accepted, 0u);  // the comparison did run on accepted lines
}

TEST(request_line, fast_and_general_agree_on_mutated_lines) {
  // Single-byte mutations of valid lines, drawn towards the bytes that matter to the grammar.
  const std::string alphabet = std::string("GET/?. HTP01\r\n\t\x7f\x80") + std::string(1, '\0');
  std::mt19937 rng(7);
  std::size_t accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string s = lines()[rng() % 9];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    accepted += fast_agrees(s, s.size(), 8194) ? 1 : 0;
    accepted += fast_agrees(s, s.size(), 1 + rng() % s.size()) ? 1 : 0;
  }
  EXPECT_GT(accepted, 0u);
}

}  // namespace
}  // namespace weir::http::detail

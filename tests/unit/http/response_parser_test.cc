// Tests for parse_response_head and response_parser: Content-Length, chunked, close-delimited, HEAD,
// 1xx/204/304, rejections, and every split point.
#include "http/response_parser.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace weir::http {
namespace {

using namespace std::string_literals;

// What a client sees of one response, copied out of the parser's views.
struct outcome {
  parse_status status = parse_status::need_more;
  int error_status = 0;
  int code = 0;
  std::string reason;
  std::string content_type;  // value of Content-Type, if any
  response_framing framing = response_framing::none;
  bool keep_alive = false;
  std::string body;
  std::size_t consumed = 0;  // bytes of this response
};

// Drives a response_parser over `in` as a client would: bytes arrive in pieces cut at `cuts`; consumed
// bytes are dropped; at the end of input, eof decides whether finish() is called.
outcome run(std::string_view in, method m, const std::vector<std::size_t>& cuts = {}, bool eof = true,
            const parser_limits& limits = {}) {
  auto p = std::make_unique<response_parser>(limits);
  p->reset(m);
  outcome o;
  std::string buf;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(in.size());
  std::size_t from = 0;
  for (std::size_t ei = 0;;) {
    response_parser::step s = p->next(buf);
    EXPECT_LE(s.consumed, buf.size());
    if (s.consumed > 0 && p->head_complete() && o.code == 0) {
      const response_head& h = p->head();
      o.code = h.status;
      o.reason = std::string(h.reason);
      if (const header* ct = h.find("content-type")) o.content_type = std::string(ct->value);
      o.framing = h.framing;
      o.keep_alive = h.keep_alive;
    }
    o.body.append(s.body);
    o.consumed += s.consumed;
    buf.erase(0, s.consumed);
    o.status = s.status;
    o.error_status = s.error_status;
    if (s.status != parse_status::need_more) break;
    if (s.consumed > 0) continue;
    if (ei == ends.size()) {
      if (eof) {
        s = p->finish();
        o.status = s.status;
        o.error_status = s.error_status;
      }
      break;
    }
    buf.append(in.substr(from, ends[ei] - from));
    from = ends[ei++];
  }
  return o;
}

void expect_same(const outcome& a, const outcome& b, const std::string& what) {
  EXPECT_EQ(a.status, b.status) << what;
  EXPECT_EQ(a.error_status, b.error_status) << what;
  EXPECT_EQ(a.code, b.code) << what;
  EXPECT_EQ(a.reason, b.reason) << what;
  EXPECT_EQ(a.content_type, b.content_type) << what;
  EXPECT_EQ(a.framing, b.framing) << what;
  EXPECT_EQ(a.keep_alive, b.keep_alive) << what;
  EXPECT_EQ(a.body, b.body) << what;
  EXPECT_EQ(a.consumed, b.consumed) << what;
}

TEST(response_parser, content_length) {
  const std::string r = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
  const outcome o = run(r + "HTTP/1.1 200", method::get);
  EXPECT_EQ(o.status, parse_status::complete);
  EXPECT_EQ(o.code, 200);
  EXPECT_EQ(o.reason, "OK");
  EXPECT_EQ(o.content_type, "text/plain");
  EXPECT_EQ(o.framing, response_framing::content_length);
  EXPECT_TRUE(o.keep_alive);
  EXPECT_EQ(o.body, "hello");
  EXPECT_EQ(o.consumed, r.size());  // the next response's bytes are left alone
}

TEST(response_parser, chunked_with_trailers) {
  const std::string r =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\n";
  const outcome o = run(r + "next", method::get);
  EXPECT_EQ(o.status, parse_status::complete);
  EXPECT_EQ(o.framing, response_framing::chunked);
  EXPECT_EQ(o.body, "Wikipedia in\r\n\r\nchunks.");
  EXPECT_EQ(o.consumed, r.size());
}

TEST(response_parser, close_delimited) {
  const std::string r = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\ndata: 2\n\n";
  outcome o = run(r, method::get, {}, false);
  EXPECT_EQ(o.status, parse_status::need_more);
  EXPECT_EQ(o.framing, response_framing::until_close);
  EXPECT_FALSE(o.keep_alive);
  EXPECT_EQ(o.body, "data: 1\n\ndata: 2\n\n");
  o = run(r, method::get, {}, true);
  EXPECT_EQ(o.status, parse_status::complete);
  EXPECT_EQ(o.body, "data: 1\n\ndata: 2\n\n");
}

TEST(response_parser, head_and_bodyless_statuses) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
  outcome o = run(head + "HTTP/1.1 ...", method::head);
  EXPECT_EQ(o.status, parse_status::complete);
  EXPECT_EQ(o.framing, response_framing::none);
  EXPECT_EQ(o.consumed, head.size());
  EXPECT_TRUE(o.body.empty());

  for (const char* line : {"HTTP/1.1 204 No Content", "HTTP/1.1 304 Not Modified", "HTTP/1.1 100 Continue",
                           "HTTP/1.1 103 Early Hints"}) {
    const std::string r = std::string(line) + "\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n";
    o = run(r + "rest", method::get);
    EXPECT_EQ(o.status, parse_status::complete) << line;
    EXPECT_EQ(o.consumed, r.size()) << line;
    EXPECT_TRUE(o.body.empty()) << line;
  }
  // The Content-Length of a HEAD response is still reported.
  response_head h;
  ASSERT_EQ(parse_response_head(head, h, method::head).status, parse_status::complete);
  EXPECT_TRUE(h.has_content_length);
  EXPECT_EQ(h.content_length, 100u);
}

TEST(response_parser, interim_then_final) {
  const std::string in = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
  response_parser p;
  p.reset(method::post);
  std::string_view rest = in;
  auto s = p.feed(rest, [](std::string_view) {});
  ASSERT_EQ(s.status, parse_status::complete);
  EXPECT_EQ(p.head().status, 100);
  rest.remove_prefix(s.consumed);
  p.reset(method::post);
  std::string body;
  s = p.feed(rest, [&](std::string_view d) { body.append(d); });
  ASSERT_EQ(s.status, parse_status::complete);
  EXPECT_EQ(p.head().status, 201);
  EXPECT_EQ(body, "ok");
  EXPECT_EQ(p.body_bytes(), 2u);
  EXPECT_EQ(s.consumed, rest.size());
}

TEST(response_parser, status_line_variants) {
  outcome o = run("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", method::get);
  EXPECT_EQ(o.status, parse_status::complete);
  EXPECT_EQ(o.code, 200);
  EXPECT_EQ(o.reason, "");
  o = run("HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n", method::get);
  EXPECT_EQ(o.code, 404);
  o = run("HTTP/1.1 500 Internal\tServer \xc3\xa9rror\r\nContent-Length: 0\r\n\r\n", method::get);
  EXPECT_EQ(o.reason, "Internal\tServer \xc3\xa9rror");
}

TEST(response_parser, keep_alive_rules) {
  EXPECT_TRUE(run("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", method::get).keep_alive);
  EXPECT_FALSE(
      run("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", method::get).keep_alive);
  EXPECT_FALSE(run("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", method::get).keep_alive);
  EXPECT_TRUE(
      run("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", method::get).keep_alive);
}

TEST(response_parser, rejections) {
  const std::pair<std::string, int> cases[] = {
      {"HTTP/1.1 20 OK\r\n\r\n", 400},
      {"HTTP/1.1 2000 OK\r\n\r\n", 400},
      {"HTTP/1.1 099 Odd\r\n\r\n", 400},
      {"HTTP/1.1  200 OK\r\n\r\n", 400},
      {"HTTP/1.1 200 O\x01K\r\n\r\n", 400},
      {"HTTP/2.0 200 OK\r\n\r\n", 505},
      {"HTTP/1.1 200 OK\n\r\n", 400},
      {"ICY 200 OK\r\n\r\n", 400},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 400},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", 400},
      {"HTTP/1.1 200 OK\r\nX : a\r\n\r\n", 400},
  };
  for (const auto& [in, status] : cases) {
    const outcome o = run(in, method::get);
    EXPECT_EQ(o.status, parse_status::error) << in;
    EXPECT_EQ(o.error_status, status) << in;
  }
  parser_limits small;
  small.max_body_bytes = 4;
  EXPECT_EQ(
      run("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", method::get, {}, true, small).error_status,
      413);
  EXPECT_EQ(run("HTTP/1.1 200 OK\r\n\r\nhello", method::get, {}, true, small).error_status, 413);
  EXPECT_EQ(run("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", method::get,
                {}, true, small)
                .error_status,
            413);
  small = {};
  small.max_head_bytes = 64;
  EXPECT_EQ(run("HTTP/1.1 200 OK\r\nX: " + std::string(100, 'x') + "\r\n\r\n", method::get, {}, true, small)
                .error_status,
            431);
}

TEST(response_parser, truncated_responses_fail_on_eof) {
  for (const std::string& in : {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"s,
                                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"s,
                                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"s, ""s}) {
    const outcome o = run(in, method::get);
    EXPECT_EQ(o.status, parse_status::error) << in;
    EXPECT_EQ(o.error_status, 400) << in;
  }
}

TEST(response_parser, every_split_point) {
  const std::vector<std::pair<std::string, method>> samples = {
      {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n[1,2,3,4,5]",
       method::get},
      {"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"
       "10;x=y\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\n",
       method::get},
      {"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n", method::get},
      {"HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\nContent-Length: 30\r\n\r\n", method::get},
      {"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 30\r\n\r\n", method::head},
      {"HTTP/1.1 204 No Content\r\nStream-Next-Offset: 0000000000000010_0000000000000020\r\n\r\n",
       method::post},
  };
  for (const auto& [in, m] : samples) {
    const outcome whole = run(in, m);
    ASSERT_EQ(whole.status, parse_status::complete) << in;
    ASSERT_EQ(whole.consumed, in.size()) << in;
    for (std::size_t k = 0; k <= in.size(); ++k) {
      expect_same(run(in, m, {k}), whole, "split at " + std::to_string(k) + " of " + in);
    }
    for (std::size_t k = 0; k + 3 <= in.size(); ++k) {
      expect_same(run(in, m, {k, k + 1, k + 3}), whole, "splits near " + std::to_string(k) + " of " + in);
    }
  }
}

TEST(response_parser, empty_and_null_views_need_more) {
  response_head h;
  EXPECT_EQ(parse_response_head(std::string_view(), h).status, parse_status::need_more);
  response_parser p;
  EXPECT_EQ(p.next(std::string_view()).status, parse_status::need_more);
  EXPECT_EQ(p.next(std::string_view()).consumed, 0u);
}

TEST(response_parser, back_to_back_responses) {
  const std::string one = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
  const std::string two = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n";
  std::string all;
  for (int i = 0; i < 150; ++i) all += one + two;
  response_parser p;
  std::string_view rest = all;
  for (int i = 0; i < 300; ++i) {
    p.reset(method::get);
    std::string body;
    const auto s = p.feed(rest, [&](std::string_view d) { body.append(d); });
    ASSERT_EQ(s.status, parse_status::complete) << i;
    EXPECT_EQ(body, i % 2 == 0 ? "abc" : "de") << i;
    rest.remove_prefix(s.consumed);
  }
  EXPECT_TRUE(rest.empty());
}

}  // namespace
}  // namespace weir::http

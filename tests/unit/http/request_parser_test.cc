// Tests for parse_request_head (RFC 9112): fields, framing, keep-alive, every rejection with its status,
// every split point, and long pipelines.
#include "http/request_parser.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace weir::http {
namespace {

using namespace std::string_literals;

struct parsed {
  std::string input;  // the views in h point here
  parse_result r;
  request_head h;
};

// request_head is large; keep results on the heap, with their own copy of the input.
std::unique_ptr<parsed> parse(std::string_view s, const parser_limits& limits = {}) {
  auto p = std::make_unique<parsed>();
  p->input = std::string(s);
  p->r = parse_request_head(p->input, p->h, limits);
  return p;
}

void expect_error(std::string_view s, int status, const parser_limits& limits = {}) {
  auto p = parse(s, limits);
  EXPECT_EQ(p->r.status, parse_status::error) << s;
  EXPECT_EQ(p->r.error_status, status) << s << " reason: " << p->r.reason;
  EXPECT_FALSE(p->r.reason.empty()) << s;
  // Every prefix: need_more or the same error (an error never depends on bytes after it).
  for (std::size_t k = 0; k < s.size(); ++k) {
    auto q = parse(s.substr(0, k), limits);
    ASSERT_NE(q->r.status, parse_status::complete) << "prefix " << k << " of " << s;
    if (q->r.status == parse_status::error) {
      EXPECT_EQ(q->r.error_status, status) << "prefix " << k << " of " << s;
    }
  }
}

TEST(request_parser, simple_get) {
  const std::string s = "GET /a/b?x=1&y HTTP/1.1\r\nHost: example.com\r\nUser-Agent:  t  \r\n\r\n";
  auto p = parse(s);
  ASSERT_EQ(p->r.status, parse_status::complete) << p->r.reason;
  EXPECT_EQ(p->r.consumed, s.size());
  EXPECT_EQ(p->h.method, method::get);
  EXPECT_EQ(p->h.method_name, "GET");
  EXPECT_EQ(p->h.target, "/a/b?x=1&y");
  EXPECT_EQ(p->h.path, "/a/b");
  EXPECT_EQ(p->h.query, "x=1&y");
  EXPECT_EQ(p->h.version_minor, 1);
  ASSERT_EQ(p->h.header_count, 2u);
  EXPECT_EQ(p->h.headers[0].name, "Host");
  EXPECT_EQ(p->h.headers[0].value, "example.com");
  EXPECT_EQ(p->h.headers[1].value, "t");
  EXPECT_EQ(p->h.framing, body_framing::none);
  EXPECT_TRUE(p->h.keep_alive);
  EXPECT_FALSE(p->h.expect_continue);
}

TEST(request_parser, views_point_into_the_buffer) {
  const std::string s = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
  auto p = parse(s);
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.target.data(), p->input.data() + 4);
  EXPECT_EQ(p->h.headers[0].value.data(), p->input.data() + s.find("h\r\n\r\n"));
}

TEST(request_parser, methods) {
  const std::pair<const char*, method> cases[] = {
      {"GET", method::get},       {"HEAD", method::head},  {"POST", method::post},
      {"PUT", method::put},       {"DELETE", method::del}, {"OPTIONS", method::options},
      {"PATCH", method::patch},   {"get", method::other},  {"PROPFIND", method::other},
      {"CONNECT", method::other}, {"X-Y", method::other},  {"GETS", method::other},
  };
  for (const auto& [name, m] : cases) {
    const std::string s = std::string(name) + " / HTTP/1.1\r\nHost: h\r\n\r\n";
    auto p = parse(s);
    ASSERT_EQ(p->r.status, parse_status::complete) << name;
    EXPECT_EQ(p->h.method, m) << name;
    EXPECT_EQ(p->h.method_name, name);
  }
}

TEST(request_parser, find_is_ascii_case_insensitive) {
  auto p = parse("GET / HTTP/1.1\r\nHost: h\r\nX-Custom-Thing: 1\r\nx-custom-thing: 2\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  const header* h = p->h.find("X-CUSTOM-THING");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->value, "1");
  EXPECT_NE(p->h.find("host"), nullptr);
  EXPECT_EQ(p->h.find("x-custom-thin"), nullptr);
  EXPECT_EQ(p->h.find("x-custom-thinG2"), nullptr);
  EXPECT_TRUE(ascii_iequals("Content-Type", "cONTENT-tYPE"));
  EXPECT_FALSE(ascii_iequals("a[", "A{"));  // only letters fold
}

TEST(request_parser, header_values_trim_and_keep_inner_whitespace_and_obs_text) {
  auto p = parse("GET / HTTP/1.1\r\nHost:h\r\nA:\t a \t b\t \r\nB:\r\nC: \xc3\xa9t\xc3\xa9\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete) << p->r.reason;
  EXPECT_EQ(p->h.headers[0].value, "h");
  EXPECT_EQ(p->h.headers[1].value, "a \t b");
  EXPECT_EQ(p->h.headers[2].value, "");
  EXPECT_EQ(p->h.headers[3].value, "\xc3\xa9t\xc3\xa9");
}

TEST(request_parser, long_header_values_cross_simd_blocks) {
  std::string v(1000, 'v');
  v[500] = '\t';
  auto p = parse("GET / HTTP/1.1\r\nHost: h\r\nLong: " + v + "\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.find("long")->value, v);
  for (std::size_t at : {0u, 15u, 16u, 17u, 31u, 499u, 998u}) {
    std::string bad = v;
    bad[at] = '\x01';
    expect_error("GET / HTTP/1.1\r\nHost: h\r\nLong: x" + bad + "\r\n\r\n", 400);
  }
}

TEST(request_parser, long_header_names_with_every_tchar) {
  const std::string name =
      "X_Custom.Header!#$%&'*+-^_`|~0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  auto p = parse("GET / HTTP/1.1\r\nHost: h\r\n" + name + ": v\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete) << p->r.reason;
  EXPECT_EQ(p->h.headers[1].name, name);
  // A non-token byte anywhere in a long name is caught, whatever its position in a 16-byte block.
  for (std::size_t at = 0; at < name.size(); ++at) {
    for (char bad : {'(', '@', '[', '{', '\x80', '\r', ' ', '"', '/', '\x7f'}) {
      std::string n = name;
      n[at] = bad;
      auto q = parse("GET / HTTP/1.1\r\nHost: h\r\n" + n + ": v\r\n\r\n");
      EXPECT_EQ(q->r.status, parse_status::error) << at << " " << int(bad);
      EXPECT_EQ(q->r.error_status, 400);
    }
  }
}

TEST(request_parser, leading_empty_lines_are_skipped) {
  const std::string s = "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n";
  auto p = parse(s);
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->r.consumed, s.size());
  EXPECT_EQ(p->h.target, "/");
}

TEST(request_parser, absolute_form_and_asterisk) {
  auto p = parse("GET http://example.com:80/s/x?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.path, "/s/x");
  EXPECT_EQ(p->h.query, "q=1");
  p = parse("GET HTTPS://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.path, "/");
  p = parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.method, method::options);
  EXPECT_EQ(p->h.path, "*");
}

TEST(request_parser, keep_alive_rules) {
  struct tc {
    const char* version;
    const char* connection;  // nullptr: no header
    bool keep_alive;
  };
  const tc cases[] = {
      {"1.1", nullptr, true},      {"1.1", "close", false},          {"1.1", "Close", false},
      {"1.1", "keep-alive", true}, {"1.1", "upgrade, close", false}, {"1.1", "foo ,  CLOSE ,bar", false},
      {"1.1", "closed", true},     {"1.0", nullptr, false},          {"1.0", "keep-alive", true},
      {"1.0", "Keep-Alive", true}, {"1.0", "foo, keep-alive", true}, {"1.0", "keep-alive, close", false},
      {"1.0", "close", false},
  };
  for (const auto& c : cases) {
    std::string s = std::string("GET / HTTP/") + c.version + "\r\nHost: h\r\n";
    if (c.connection) s += std::string("Connection: ") + c.connection + "\r\n";
    s += "\r\n";
    auto p = parse(s);
    ASSERT_EQ(p->r.status, parse_status::complete) << s;
    EXPECT_EQ(p->h.keep_alive, c.keep_alive) << s;
  }
  // Two Connection headers are combined.
  auto p = parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: foo\r\nconnection: close\r\n\r\n");
  EXPECT_FALSE(p->h.keep_alive);
}

TEST(request_parser, http10_needs_no_host_and_minor_versions) {
  auto p = parse("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.version_minor, 0);
  p = parse("GET / HTTP/1.7\r\nHost: h\r\n\r\n");  // RFC 9110 2.5: read as the highest we know
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.version_minor, 1);
}

TEST(request_parser, expect_continue) {
  auto p = parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_TRUE(p->h.expect_continue);
  p = parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_FALSE(p->h.expect_continue);  // RFC 9110 10.1.1: ignored in HTTP/1.0
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", 417);
}

TEST(request_parser, content_length_framing) {
  auto p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 42\r\n\r\nbody");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.framing, body_framing::content_length);
  EXPECT_EQ(p->h.content_length, 42u);
  EXPECT_EQ(p->r.consumed,
            std::string_view("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 42\r\n\r\n").size());

  p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(p->h.framing, body_framing::none);
  // Identical values, as repeated fields or a list (RFC 9110 8.6), are one length.
  p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.content_length, 7u);
  p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7, 7,7\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.content_length, 7u);
  p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0007\r\n\r\n");
  EXPECT_EQ(p->h.content_length, 7u);

  parser_limits small;
  small.max_body_bytes = 100;
  p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n", small);
  EXPECT_EQ(p->r.status, parse_status::complete);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n", 413, small);
}

TEST(request_parser, content_length_rejections) {
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\nContent-Length: 8\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7, 8\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 0\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5,\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n", 413);
}

TEST(request_parser, transfer_encoding) {
  auto p = parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.framing, body_framing::chunked);
  p = parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n");
  EXPECT_EQ(p->h.framing, body_framing::chunked);
  p = parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: , chunked\r\n\r\n");
  EXPECT_EQ(p->h.framing, body_framing::chunked);

  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 501);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400);
  expect_error(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400);
  // Smuggling shapes (RFC 9112 6.1, 6.3).
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400);
  expect_error("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
  expect_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n", 400);
}

TEST(request_parser, request_line_rejections) {
  expect_error("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505);
  expect_error("GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505);
  expect_error("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400);
  expect_error("GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400);
  expect_error("GET / HTTP/11\r\nHost: h\r\n\r\n", 400);
  expect_error("GET / http/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET / HTTX/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET / HTTP/1.x\r\nHost: h\r\n\r\n", 400);
  expect_error("GET /\r\nHost: h\r\n\r\n", 400);
  expect_error("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET /  HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error(" GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GE\x01T / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("GET / HTTP/1.1\nHost: h\r\n\r\n", 400);
  expect_error("GET / HTTP/1.1\r\r\nHost: h\r\n\r\n", 400);
  expect_error("\r\rGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_error("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
}

TEST(request_parser, header_rejections) {
  expect_error("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400);   // obs-fold
  expect_error("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", 400);  // obs-fold
  expect_error("GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400);                // SP before first field
  expect_error("GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400);                // SP before colon
  expect_error("GET / HTTP/1.1\r\nHo(st: h\r\n\r\n", 400);                // non-token name
  expect_error("GET / HTTP/1.1\r\nHost: h\r\n: x\r\n\r\n", 400);          // empty name
  expect_error("GET / HTTP/1.1\r\nHost: h\r\nNo-Colon\r\n\r\n", 400);     // no colon
  expect_error("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400);      // bare CR
  expect_error("GET / HTTP/1.1\r\nHost: h\r\nX: a\nY: b\r\n\r\n", 400);   // bare LF
  expect_error("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"s, 400);     // NUL
  expect_error("GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", 400);     // DEL
  expect_error("GET / HTTP/1.1\r\nHost: h\r\n\r\r\n", 400);               // bad end of head
  expect_error("GET / HTTP/1.1\r\nHost: h\r\n\n", 400);
}

TEST(request_parser, host_rules) {
  expect_error("GET / HTTP/1.1\r\n\r\n", 400);
  expect_error("GET / HTTP/1.1\r\nX-Host: h\r\n\r\n", 400);
  expect_error("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
  expect_error("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n", 400);
  auto p = parse("GET / HTTP/1.1\r\nHost:\r\n\r\n");  // empty Host is valid (RFC 9110 7.2)
  EXPECT_EQ(p->r.status, parse_status::complete);
  for (const char* host :
       {"example.com", "127.0.0.1:4437", "[::1]:80", "xn--bcher-kva.example", "a_b.c~d%41"}) {
    p = parse(std::string("GET / HTTP/1.1\r\nHost: ") + host + "\r\n\r\n");
    EXPECT_EQ(p->r.status, parse_status::complete) << host;
  }
  // RFC 9112 3.2: a Host with an invalid value is 400.
  for (const char* host :
       {"a b", "a/b", "user@host", "h?x", "h#f", "h\"", "\xc3\xa9.example", "a\tb", "<h>"}) {
    expect_error(std::string("GET / HTTP/1.1\r\nHost: ") + host + "\r\n\r\n", 400);
  }
}

TEST(request_parser, size_limits) {
  parser_limits lim;
  lim.max_request_line = 64;
  lim.max_head_bytes = 256;
  const std::string line_ok = "GET /" + std::string(64 - 14, 'a') + " HTTP/1.1";  // exactly 64
  ASSERT_EQ(line_ok.size(), 64u);
  auto p = parse(line_ok + "\r\nHost: h\r\n\r\n", lim);
  EXPECT_EQ(p->r.status, parse_status::complete) << p->r.reason;
  expect_error("GET /" + std::string(64 - 13, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n", 414, lim);
  // A long line is refused before its end arrives.
  p = parse("GET /" + std::string(100, 'a'), lim);
  EXPECT_EQ(p->r.error_status, 414);

  // Head of exactly max_head_bytes passes, one more byte is 431.
  std::string head = "GET / HTTP/1.1\r\nHost: h\r\nX: ";
  const std::string tail = "\r\n\r\n";
  std::string fill(256 - head.size() - tail.size(), 'x');
  p = parse(head + fill + tail, lim);
  EXPECT_EQ(p->r.status, parse_status::complete) << p->r.reason;
  EXPECT_EQ(p->r.consumed, 256u);
  expect_error(head + fill + "y" + tail, 431, lim);
  p = parse(head + std::string(1000, 'x'), lim);  // no end in sight
  EXPECT_EQ(p->r.error_status, 431);

  // Too many headers.
  std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (std::size_t i = 1; i < max_headers; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  p = parse(many + "\r\n");
  ASSERT_EQ(p->r.status, parse_status::complete);
  EXPECT_EQ(p->h.header_count, max_headers);
  expect_error(many + "One-More: v\r\n\r\n", 431);
}

// Valid requests of several shapes, each checked at every split point.
const std::vector<std::string>& sample_requests() {
  static const std::vector<std::string> v = {
      "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one request written over four lines
      "\r\nGET /plaintext HTTP/1.1\r\nHost: server\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) "
      "Gecko/20130501 Firefox/30.0 AppleWebKit/600.00 Chrome/30.0.0000.0 Safari/600.00\r\n"
      "Cookie: uid=12345678901234567890; __utma=1.1234567890.1234567890.1234567890.1234567890.12\r\n"
      "Accept: text/plain,text/html;q=0.9\r\nConnection: keep-alive\r\n\r\n",
      "POST /v1/stream/a?offset=-1&live=sse HTTP/1.1\r\nHost: x:4437\r\nContent-Type: application/json\r\n"
      "Content-Length: 13\r\nExpect: 100-continue\r\n\r\n",
      "PUT /s HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\nX:\t\tv\t\r\n\r\n",
      "DELETE /s HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
  };
  return v;
}

TEST(request_parser, every_split_point) {
  for (const std::string& s : sample_requests()) {
    auto whole = parse(s);
    ASSERT_EQ(whole->r.status, parse_status::complete) << s << whole->r.reason;
    ASSERT_EQ(whole->r.consumed, s.size());
    for (std::size_t k = 0; k < s.size(); ++k) {
      auto p = parse(std::string_view(s).substr(0, k));
      EXPECT_EQ(p->r.status, parse_status::need_more) << "split at " << k << ": " << s;
    }
    // Same answer when parsed from a copy with trailing bytes of the next request.
    const std::string more = s + "GET / HTTP/1.1\r\n";
    auto again = parse(more);
    ASSERT_EQ(again->r.status, parse_status::complete);
    EXPECT_EQ(again->r.consumed, s.size());
    EXPECT_EQ(again->h.header_count, whole->h.header_count);
    for (std::size_t i = 0; i < whole->h.header_count; ++i) {
      EXPECT_EQ(again->h.headers[i].name, whole->h.headers[i].name);
      EXPECT_EQ(again->h.headers[i].value, whole->h.headers[i].value);
    }
    EXPECT_EQ(again->h.keep_alive, whole->h.keep_alive);
    EXPECT_EQ(again->h.framing, whole->h.framing);
    EXPECT_EQ(again->h.expect_continue, whole->h.expect_continue);
  }
}

TEST(request_parser, empty_and_null_views_need_more) {
  request_head h;
  EXPECT_EQ(parse_request_head(std::string_view(), h).status, parse_status::need_more);
  EXPECT_EQ(parse_request_head(std::string_view("", 0), h).status, parse_status::need_more);
  EXPECT_EQ(parse_request_head("\r\n", h).status, parse_status::need_more);
}

TEST(request_parser, pipeline_of_300) {
  std::string buf;
  std::vector<std::size_t> shape;
  for (std::size_t i = 0; i < 300; ++i) {
    const std::size_t k = (i * 7) % sample_requests().size();
    buf += sample_requests()[k];
    shape.push_back(k);
  }
  std::string_view rest = buf;
  request_head h;
  for (std::size_t i = 0; i < 300; ++i) {
    const parse_result r = parse_request_head(rest, h);
    ASSERT_EQ(r.status, parse_status::complete) << "request " << i << ": " << r.reason;
    ASSERT_EQ(r.consumed, sample_requests()[shape[i]].size()) << "request " << i;
    auto alone = parse(sample_requests()[shape[i]]);
    EXPECT_EQ(h.target, alone->h.target);
    EXPECT_EQ(h.method, alone->h.method);
    EXPECT_EQ(h.header_count, alone->h.header_count);
    rest.remove_prefix(r.consumed);
  }
  EXPECT_TRUE(rest.empty());
  EXPECT_EQ(parse_request_head(rest, h).status, parse_status::need_more);
}

}  // namespace
}  // namespace weir::http

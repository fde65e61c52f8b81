// Tests for chunked_decoder (RFC 9112 7.1): sizes, extensions, trailers, rejections, and every split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "http/request_parser.h"

namespace weir::http {
namespace {

using namespace std::string_literals;

struct decoded {
  parse_status status = parse_status::need_more;
  std::size_t consumed = 0;
  int error_status = 0;
  std::string body;
};

// Feeds `in` in pieces cut at `cuts` (positions), discarding consumed bytes like a connection does:
// a piece's unconsumed tail is kept and prepended to the next piece.
decoded decode(std::string_view in, const std::vector<std::size_t>& cuts = {},
               std::uint64_t max_body = UINT64_MAX) {
  chunked_decoder dec(max_body);
  decoded out;
  std::string pending;
  std::size_t from = 0;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(in.size());
  for (std::size_t end : ends) {
    pending.append(in.substr(from, end - from));
    from = end;
    const chunked_decoder::step s = dec.feed(pending, [&](std::string_view d) { out.body.append(d); });
    EXPECT_LE(s.consumed, pending.size());
    out.consumed += s.consumed;
    pending.erase(0, s.consumed);
    out.status = s.status;
    out.error_status = s.error_status;
    if (s.status != parse_status::need_more) {
      EXPECT_FALSE(s.status == parse_status::error && s.reason.empty());
      break;
    }
  }
  return out;
}

void expect_body(std::string_view in, std::string_view body) {
  const decoded d = decode(in);
  EXPECT_EQ(d.status, parse_status::complete) << in;
  EXPECT_EQ(d.body, body) << in;
  EXPECT_EQ(d.consumed, in.size()) << in;
}

void expect_error(std::string_view in, int status, std::uint64_t max_body = UINT64_MAX) {
  const decoded d = decode(in, {}, max_body);
  EXPECT_EQ(d.status, parse_status::error) << in;
  EXPECT_EQ(d.error_status, status) << in;
  // Split anywhere (long inputs: every 97th point): the same error.
  const std::size_t stride = in.size() < 512 ? 1 : 97;
  for (std::size_t k = 1; k < in.size(); k += stride) {
    const decoded s = decode(in, {k}, max_body);
    EXPECT_EQ(s.status, parse_status::error) << "split " << k << " of " << in;
    EXPECT_EQ(s.error_status, status) << "split " << k << " of " << in;
  }
}

TEST(chunked_decoder, basic) {
  expect_body("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world");
  expect_body("0\r\n\r\n", "");
}

TEST(chunked_decoder, hex_sizes) {
  const std::string a(0x1A, 'a');
  expect_body("1A\r\n" + a + "\r\n0\r\n\r\n", a);
  expect_body("1a\r\n" + a + "\r\n0\r\n\r\n", a);
  expect_body("0001a\r\n" + a + "\r\n000\r\n\r\n", a);
  const std::string big(0x1000, 'z');
  expect_body("1000\r\n" + big + "\r\n0\r\n\r\n", big);
}

TEST(chunked_decoder, extensions_are_ignored) {
  expect_body("5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello");
  expect_body("5 ; a=\"quoted; \\\"str\" ;b\r\nhello\r\n0\r\n\r\n", "hello");
  expect_body("5\t;x\r\nhello\r\n0\r\n\r\n", "hello");
}

TEST(chunked_decoder, trailers_are_parsed_and_ignored) {
  expect_body("5\r\nhello\r\n0\r\nX-Checksum: abc\r\nOther:\t v \r\n\r\n", "hello");
  expect_body("0\r\nA:\r\n\r\n", "");
}

TEST(chunked_decoder, stops_at_end_of_body) {
  // Bytes after the body (a pipelined request) are not consumed.
  const std::string body = "3\r\nabc\r\n0\r\n\r\n";
  chunked_decoder dec;
  std::string got;
  const auto s = dec.feed(body + "GET / HTTP/1.1\r\n", [&](std::string_view d) { got.append(d); });
  EXPECT_EQ(s.status, parse_status::complete);
  EXPECT_EQ(s.consumed, body.size());
  EXPECT_EQ(got, "abc");
  EXPECT_EQ(dec.decoded_bytes(), 3u);
  EXPECT_TRUE(dec.done());
  // Stays complete; reset() starts over.
  EXPECT_EQ(dec.feed("x", [](std::string_view) {}).status, parse_status::complete);
  dec.reset();
  EXPECT_EQ(dec.decoded_bytes(), 0u);
  EXPECT_EQ(dec.feed(body, [](std::string_view) {}).status, parse_status::complete);
}

TEST(chunked_decoder, next_hands_out_views_into_the_input) {
  const std::string in = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  chunked_decoder dec;
  std::string_view rest = in;
  std::vector<std::string_view> spans;
  for (int guard = 0; guard < 100; ++guard) {
    std::string_view data;
    const auto s = dec.next(rest, data);
    if (!data.empty()) spans.push_back(data);
    rest.remove_prefix(s.consumed);
    if (s.status == parse_status::complete) break;
    ASSERT_EQ(s.status, parse_status::need_more);
    ASSERT_GT(s.consumed, 0u);
  }
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].data(), in.data() + 3);
  EXPECT_EQ(spans[1], "de");
  EXPECT_TRUE(rest.empty());
}

TEST(chunked_decoder, every_split_point_and_byte_by_byte) {
  const std::string in = "5;x=y\r\nhello\r\n1B\r\n, chunked world of bytes!!!\r\n0\r\nT: v\r\n\r\n";
  const std::string body = "hello, chunked world of bytes!!!";
  for (std::size_t k = 0; k <= in.size(); ++k) {
    const decoded d = decode(in, {k});
    EXPECT_EQ(d.status, parse_status::complete) << "split " << k;
    EXPECT_EQ(d.body, body) << "split " << k;
    EXPECT_EQ(d.consumed, in.size()) << "split " << k;
  }
  for (std::size_t k = 0; k + 1 < in.size(); ++k) {
    const decoded d = decode(in, {k, k + 1});
    EXPECT_EQ(d.body, body) << "splits " << k;
  }
  std::vector<std::size_t> every;
  for (std::size_t k = 1; k < in.size(); ++k) every.push_back(k);
  const decoded d = decode(in, every);
  EXPECT_EQ(d.status, parse_status::complete);
  EXPECT_EQ(d.body, body);
}

TEST(chunked_decoder, incomplete_input_needs_more) {
  const std::string in = "5\r\nhello\r\n0\r\nT: v\r\n\r\n";
  for (std::size_t k = 0; k < in.size(); ++k) {
    const decoded d = decode(in.substr(0, k));
    EXPECT_EQ(d.status, parse_status::need_more) << k;
  }
}

TEST(chunked_decoder, rejections) {
  expect_error("\r\n", 400);          // empty size
  expect_error("g\r\nabc\r\n", 400);  // non-hex
  expect_error("-1\r\n", 400);
  expect_error("0x5\r\nhello\r\n", 400);
  expect_error("5 x\r\nhello\r\n", 400);       // junk after BWS
  expect_error("5 \r\nhello\r\n", 400);        // BWS without an extension
  expect_error("5\nhello\r\n0\r\n\r\n", 400);  // bare LF after size
  expect_error("5\r\rhello\r\n0\r\n\r\n", 400);
  expect_error("5\r\nhelloX\r\n0\r\n\r\n", 400);  // data longer than its size
  expect_error("5\r\nhello\n0\r\n\r\n", 400);     // missing CR after data
  expect_error("5\r\nhello\rX0\r\n\r\n", 400);    // missing LF after data
  expect_error("5;a\x01\r\nhello\r\n", 400);      // control char in extension
  expect_error("10000000000000000\r\n", 400);     // 17 hex digits: overflow
  expect_error("fffffffffffffffff\r\n", 400);
  expect_error("0\r\nBad Name: v\r\n\r\n", 400);  // trailer field name
  expect_error("0\r\n folded\r\n\r\n", 400);      // obs-fold in trailers
  expect_error("0\r\nA: b\x01\r\n\r\n", 400);
  expect_error("0\r\nA: b\r\r\n", 400);
  expect_error("0\r\n\rX", 400);
  expect_error("0\r\n:v\r\n\r\n", 400);
  expect_error("5;" + std::string(5000, 'e') + "\r\nhello\r\n0\r\n\r\n", 400);
  expect_error("0\r\nA: " + std::string(20000, 'v') + "\r\n\r\n", 431);
}

TEST(chunked_decoder, largest_size_and_body_limit) {
  // 16 hex digits fit; the body limit turns them into 413 before any data.
  expect_error("ffffffffffffffff\r\n", 413, 1 << 20);
  expect_error("100001\r\n", 413, 1 << 20);
  const decoded d = decode("5\r\nhello\r\n0\r\n\r\n", {}, 5);
  EXPECT_EQ(d.status, parse_status::complete);
  expect_error("5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n", 413, 5);
  const decoded big = decode("ffffffffffffffff\r\nabc");
  EXPECT_EQ(big.status, parse_status::need_more);
  EXPECT_EQ(big.body, "abc");
}

TEST(chunked_decoder, errors_stick) {
  chunked_decoder dec;
  auto s = dec.feed("z", [](std::string_view) {});
  EXPECT_EQ(s.status, parse_status::error);
  EXPECT_EQ(s.consumed, 0u);
  s = dec.feed("5\r\nhello\r\n0\r\n\r\n", [](std::string_view) {});
  EXPECT_EQ(s.status, parse_status::error);
  EXPECT_EQ(s.error_status, 400);
}

}  // namespace
}  // namespace weir::http

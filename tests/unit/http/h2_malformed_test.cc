// Malformed HTTP/2 requests (RFC 9113 8.1.1, 8.2, 8.3) are reset with RST_STREAM PROTOCOL_ERROR before a
// handler sees them (an invalid regular field too, as nghttp2 treats it), and the connection serves on.
// h2_request_check makes these checks (nghttp2's own HTTP messaging checks are off): this is what it
// must keep doing.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "http/h2_request_check.h"
#include "integration/http/http_test_support.h"
#include "unit/http/h2_test_client.h"

namespace weir::http {
namespace {

using testing::h2_client;
using testing::running_server;
using fields = std::vector<std::pair<std::string, std::string>>;

fields get(std::string path, fields extra = {}) {
  fields f = {
      {":method", "GET"}, {":scheme", "http"}, {":authority", "127.0.0.1"}, {":path", std::move(path)}};
  for (auto& e : extra) f.push_back(std::move(e));
  return f;
}

// The handler notes each request it sees as "path x-a=<value or ->".
struct seen_log {
  std::mutex mu;
  std::vector<std::string> lines;
  handler make() {
    return [this](const request& req, exchange ex) {
      const header* a = req.find("x-a");
      const header* host = req.find("host");
      std::lock_guard lock(mu);
      lines.push_back(std::string(req.path()) + " x-a=" + (a ? std::string(a->value) : "-") + " host=" +
                      (host ? std::string(host->value) : "-") + " len=" + std::to_string(req.body.size()));
      ex.respond(200, {}, "ok");
    };
  }
  std::vector<std::string> take() {
    std::lock_guard lock(mu);
    return lines;
  }
};

TEST(h2_malformed, malformed_requests_are_reset_with_protocol_error_and_never_handled) {
  seen_log log;
  running_server s(testing::test_options(), log.make());
  h2_client c(s.port());
  struct bad_case {
    const char* what;
    fields f;
    std::string body;
  };
  std::vector<bad_case> cases = {
      {"connection", get("/2", {{"connection", "keep-alive"}}), ""},
      {"keep-alive", get("/3", {{"keep-alive", "5"}}), ""},
      {"proxy-connection", get("/4", {{"proxy-connection", "x"}}), ""},
      {"transfer-encoding", get("/5", {{"transfer-encoding", "chunked"}}), ""},
      {"upgrade", get("/6", {{"upgrade", "h2c"}}), ""},
      {"te other than trailers", get("/7", {{"te", "gzip"}}), ""},
      {"pseudo after regular",
       {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {"x-a", "1"}, {":path", "/8"}},
       ""},
      {"unknown pseudo", get("/9", {{":foo", "x"}}), ""},
      {":protocol not offered", get("/10", {{":protocol", "websocket"}}), ""},
      {":status in a request", get("/11", {{":status", "200"}}), ""},
      {"duplicate :path", get("/12", {{":path", "/12"}}), ""},
      {"no :path", {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}}, ""},
      {"no :method", {{":scheme", "http"}, {":authority", "a"}, {":path", "/14"}}, ""},
      {"no :scheme", {{":method", "GET"}, {":authority", "a"}, {":path", "/15"}}, ""},
      {"no authority nor host", {{":method", "GET"}, {":scheme", "http"}, {":path", "/16"}}, ""},
      {"empty :path", get(""), ""},
      {"relative :path", get("17"), ""},
      {"bad :method", {{":method", "G T"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/18"}}, ""},
      {"bad :scheme", {{":method", "GET"}, {":scheme", "1http"}, {":authority", "a"}, {":path", "/19"}}, ""},
      {"bad :authority",
       {{":method", "GET"}, {":scheme", "http"}, {":authority", "a b"}, {":path", "/20"}},
       ""},
      {"content-length not a number", get("/21", {{"content-length", "abc"}}), "abc"},
      {"two content-lengths", get("/22", {{"content-length", "3"}, {"content-length", "3"}}), "abc"},
      {"more DATA than content-length", get("/23", {{"content-length", "3"}}), "hello"},
      {"less DATA than content-length", get("/24", {{"content-length", "10"}}), "hello"},
      {"content-length without DATA", get("/25", {{"content-length", "2"}}), ""},
      {"empty host", {{":method", "GET"}, {":scheme", "http"}, {":path", "/26"}, {"host", ""}}, ""},
      {"two hosts", get("/27", {{"host", "a"}, {"host", "b"}}), ""},
      {"CONNECT with a path", {{":method", "CONNECT"}, {":authority", "a:1"}, {":path", "/28"}}, ""},
      {"a space in a name", get("/29", {{"x a", "1"}}), ""},
      {"leading whitespace in a value", get("/30", {{"x-a", " 3"}}), ""},
      {"a control character in a value", get("/31", {{"x-a", "a\x01z"}}), ""},
      {"a bad host", {{":method", "GET"}, {":scheme", "http"}, {":path", "/32"}, {"host", "a b"}}, ""},
      {"CONNECT without authority", {{":method", "CONNECT"}, {"host", "a:1"}}, ""},
  };
  std::vector<std::int32_t> ids;
  for (auto& bc : cases) ids.push_back(c.request_fields(bc.f, bc.body));
  ASSERT_TRUE(c.run_until([&] {
    for (auto id : ids)
      if (!c.response(id).closed) return false;
    return true;
  }));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(c.response(ids[i]).error_code, NGHTTP2_PROTOCOL_ERROR) << cases[i].what;
    EXPECT_EQ(c.response(ids[i]).status, 0) << cases[i].what;
  }
  EXPECT_TRUE(log.take().empty());
  // The connection serves on.
  auto ok = c.request_fields(get("/ok"));
  ASSERT_TRUE(c.wait_closed(ok));
  EXPECT_EQ(c.response(ok).status, 200);
  EXPECT_FALSE(c.goaway());
}

TEST(h2_malformed, valid_edge_cases_are_served) {
  seen_log log;
  running_server s(testing::test_options(), log.make());
  h2_client c(s.port());
  std::vector<std::int32_t> ids = {
      c.request_fields(get("/te", {{"te", "trailers"}, {"x-a", "1"}})),
      c.request_fields(
          {{":method", "GET"}, {":scheme", "http"}, {":path", "/host"}, {"host", "h.example:80"}}),
      c.request_fields(get("/tab", {{"x-a", "a\tz"}})),  // HTAB inside: kept
      c.request_fields(get("/len", {{"content-length", "5"}}), "hello"),
      c.request_fields(get("/zero", {{"content-length", "0"}})),
      c.request_fields({{":method", "OPTIONS"}, {":scheme", "http"}, {":authority", "a"}, {":path", "*"}}),
      c.request_fields(
          {{":method", "GET"}, {":scheme", "HTTPS"}, {":authority", "[::1]:8080"}, {":path", "/v6"}}),
  };
  ASSERT_TRUE(c.run_until([&] {
    for (auto id : ids)
      if (!c.response(id).closed) return false;
    return true;
  }));
  for (auto id : ids) {
    EXPECT_EQ(c.response(id).status, 200) << id;
    EXPECT_EQ(c.response(id).error_code, 0u) << id;
  }
  auto lines = log.take();
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "* x-a=- host=a len=0",
                       "/host x-a=- host=h.example:80 len=0",
                       "/len x-a=- host=127.0.0.1 len=5",
                       "/tab x-a=a\tz host=127.0.0.1 len=0",
                       "/te x-a=1 host=127.0.0.1 len=0",
                       "/v6 x-a=- host=[::1]:8080 len=0",
                       "/zero x-a=- host=127.0.0.1 len=0",
                   }));
}

// The checker alone, for what a client library will not send (nghttp2's client lowercases names).
TEST(h2_request_check, fields_and_lengths) {
  using v = h2_request_check::verdict;
  h2_request_check::pseudo slot;
  h2_request_check upper;
  EXPECT_EQ(upper.field("X-A", "1", false, slot), v::malformed);
  EXPECT_EQ(upper.field("x{A", "1", false, slot), v::malformed);  // uppercase among other bad bytes
  h2_request_check upper_pseudo;
  EXPECT_EQ(upper_pseudo.field(":Path", "/", false, slot), v::malformed);
  for (std::string_view bad_value :
       {std::string_view("a\0b", 3), std::string_view("a\r\nb"), std::string_view("a ")}) {
    h2_request_check b;
    EXPECT_EQ(b.field("x-v", bad_value, false, slot), v::malformed);
  }
  h2_request_check empty_name;
  EXPECT_EQ(empty_name.field("", "x", false, slot), v::malformed);
  h2_request_check k;
  EXPECT_EQ(k.field(":method", "GET", false, slot), v::keep);
  EXPECT_EQ(slot, h2_request_check::method);
  EXPECT_EQ(k.field(":path", "/a", false, slot), v::keep);
  EXPECT_EQ(slot, h2_request_check::path);
  EXPECT_EQ(k.field(":scheme", "http", false, slot), v::keep);
  EXPECT_EQ(k.field(":authority", "a", false, slot), v::keep);
  EXPECT_EQ(slot, h2_request_check::authority);
  EXPECT_EQ(k.field("x-obs", "caf\xc3\xa9", false, slot), v::keep);  // obs-text
  EXPECT_EQ(slot, h2_request_check::none);
  EXPECT_EQ(k.field("content-length", "9223372036854775807", false, slot), v::keep);
  EXPECT_TRUE(k.head_complete());
  EXPECT_EQ(k.content_length(), 9223372036854775807u);
  // Trailers: no pseudo-header fields.
  EXPECT_EQ(k.field(":path", "/b", true, slot), v::malformed);
  EXPECT_EQ(k.field("x-t", "1", true, slot), v::keep);

  h2_request_check big;
  EXPECT_EQ(big.field("content-length", "9223372036854775808", false, slot), v::malformed);  // 2^63
  h2_request_check zeros;
  EXPECT_EQ(zeros.field("content-length", "007", false, slot), v::keep);
  EXPECT_TRUE(zeros.data(3));
  EXPECT_FALSE(zeros.end_stream());
  EXPECT_TRUE(zeros.data(4));
  EXPECT_TRUE(zeros.end_stream());
  EXPECT_FALSE(zeros.data(1));
  h2_request_check none;
  EXPECT_TRUE(none.data(1000));
  EXPECT_TRUE(none.end_stream());
}

}  // namespace
}  // namespace weir::http

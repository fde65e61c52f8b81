#include "protocol/stream_request.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

namespace weir::protocol {
namespace {

// A request as the engine hands it over (views into this object).
struct fake_request {
  http::request_head head;
  http::request req;
  fake_request(http::method m, std::string_view target,
               std::initializer_list<std::pair<std::string_view, std::string_view>> headers,
               std::string_view body = {}) {
    head.method = m;
    head.target = target;
    auto q = target.find('?');
    head.path = target.substr(0, q);
    head.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    for (const auto& [n, v] : headers) head.headers[head.header_count++] = http::header{n, v};
    req.head = &head;
    req.body = body;
  }
};

errc error_of(const fake_request& f) {
  return parse_stream_request(f.req).error;
}

TEST(stream_request, create_with_ttl_and_fork) {
  fake_request f(http::method::put, "/v1/stream/a",
                 {{"Content-Type", "text/plain"},
                  {"Stream-TTL", "60"},
                  {"Stream-Forked-From", "/v1/stream/src"},
                  {"Stream-Fork-Offset", "0000000000000000_0000000000000003"},
                  {"Stream-Fork-Sub-Offset", "2"},
                  {"Stream-Closed", "TRUE"}},
                 "body");
  parse_outcome o = parse_stream_request(f.req);
  ASSERT_EQ(o.error, errc::ok);
  const stream_request& r = o.request;
  EXPECT_EQ(r.op, operation::create);
  EXPECT_EQ(r.path, "/v1/stream/a");
  EXPECT_EQ(r.expiry.ttl_seconds, std::optional<std::uint64_t>(60));
  EXPECT_TRUE(r.closed);
  ASSERT_TRUE(r.fork.has_value());
  EXPECT_EQ(r.fork->source, "/v1/stream/src");
  EXPECT_EQ(r.fork->offset->value(), 3u);
  EXPECT_EQ(r.fork->sub_offset, 2u);
  EXPECT_TRUE(r.has_body);
  ASSERT_TRUE(r.payload.bytes);
  EXPECT_EQ(*r.payload.bytes, "body");
}

TEST(stream_request, create_errors) {
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a",
                                  {{"Stream-TTL", "1"}, {"Stream-Expires-At", "2030-01-01T00:00:00Z"}})),
            errc::ttl_and_expires_at);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a", {{"Stream-TTL", "01"}})), errc::bad_ttl);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a", {{"Stream-Expires-At", "soon"}})),
            errc::bad_expires_at);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a", {{"Stream-Fork-Sub-Offset", "0"}})),
            errc::sub_offset_without_fork);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a",
                                  {{"Stream-Forked-From", "/s"}, {"Stream-Fork-Sub-Offset", "1"}})),
            errc::sub_offset_without_offset);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a",
                                  {{"Stream-Forked-From", "/s"}, {"Stream-Fork-Offset", "12"}})),
            errc::bad_fork_offset);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a/../b", {})), errc::bad_path);
  EXPECT_EQ(error_of(fake_request(http::method::patch, "/a", {})), errc::method_not_allowed);
}

TEST(stream_request, append_headers) {
  fake_request f(http::method::post, "/a",
                 {{"content-type", "text/plain"},
                  {"producer-id", "p"},
                  {"producer-epoch", "1"},
                  {"producer-seq", "2"},
                  {"stream-seq", "007"}},
                 "x");
  parse_outcome o = parse_stream_request(f.req);
  ASSERT_EQ(o.error, errc::ok);
  EXPECT_EQ(o.request.producer, (streams::producer_ref{"p", 1, 2}));
  EXPECT_EQ(o.request.stream_seq, std::optional<std::string>("007"));
}

TEST(stream_request, append_errors) {
  EXPECT_EQ(error_of(fake_request(http::method::post, "/a", {{"Content-Type", "text/plain"}})),
            errc::empty_body);
  EXPECT_EQ(error_of(fake_request(http::method::post, "/a", {{"Stream-Closed", "true"}})), errc::ok);
  EXPECT_EQ(error_of(fake_request(http::method::post, "/a", {{"Stream-Closed", "yes"}})), errc::empty_body);
  // A body without Content-Type is refused by the stream's owner (it names the stream's type).
  parse_outcome untyped = parse_stream_request(fake_request(http::method::post, "/a", {}, "x").req);
  EXPECT_EQ(untyped.error, errc::ok);
  EXPECT_TRUE(untyped.request.has_body);
  EXPECT_FALSE(untyped.request.has_content_type);
  EXPECT_EQ(
      error_of(fake_request(http::method::post, "/a", {{"Content-Type", "t/p"}, {"Producer-Id", "p"}}, "x")),
      errc::bad_producer);
  EXPECT_EQ(
      error_of(fake_request(
          http::method::post, "/a",
          {{"Content-Type", "t/p"}, {"Producer-Id", ""}, {"Producer-Epoch", "0"}, {"Producer-Seq", "0"}},
          "x")),
      errc::empty_producer_id);
  EXPECT_EQ(
      error_of(fake_request(
          http::method::post, "/a",
          {{"Content-Type", "t/p"}, {"Producer-Id", "p"}, {"Producer-Epoch", "-1"}, {"Producer-Seq", "0"}},
          "x")),
      errc::bad_producer);
}

TEST(stream_request, read_parameters) {
  fake_request f(http::method::get,
                 "/a?live=long-poll&offset=0000000000000000_0000000000000009&cursor=77&x=1",
                 {{"If-None-Match", "\"e\""}});
  parse_outcome o = parse_stream_request(f.req);
  ASSERT_EQ(o.error, errc::ok);
  EXPECT_EQ(o.request.live, live_mode::long_poll);
  EXPECT_EQ(o.request.offset->at.value(), 9u);
  EXPECT_EQ(o.request.cursor, std::optional<std::string>("77"));
  EXPECT_EQ(o.request.if_none_match, std::optional<std::string>("\"e\""));
  EXPECT_EQ(parse_stream_request(fake_request(http::method::get, "/a?offset=now&live=sse", {}).req)
                .request.offset->k,
            offset_param::kind::now);
}

TEST(stream_request, read_errors) {
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?offset=", {})), errc::bad_offset);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?offset=-1&offset=-1", {})), errc::bad_offset);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?offset=0,1", {})), errc::bad_offset);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?offset=0%201", {})), errc::bad_offset);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?live=long-poll", {})), errc::live_needs_offset);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?live=sse", {})), errc::live_needs_offset);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?offset=-1&live=websocket", {})), errc::bad_live);
}

// A browser's EventSource reconnects to its original URL (often offset=-1) with the id of the
// last event it dispatched; that id (an offset) is where the session resumes.
TEST(stream_request, last_event_id_wins_over_the_url_offset_for_sse) {
  fake_request f(http::method::get, "/a?offset=-1&live=sse",
                 {{"Last-Event-ID", "0000000000000000_0000000000000042"}});
  parse_outcome o = parse_stream_request(f.req);
  ASSERT_EQ(o.error, errc::ok);
  ASSERT_TRUE(o.request.offset);
  EXPECT_EQ(o.request.offset->k, offset_param::kind::at);
  EXPECT_EQ(o.request.offset->at.value(), 42u);
  EXPECT_EQ(o.request.offset_text, "0000000000000000_0000000000000042");
  // The other forms of an offset are accepted too.
  EXPECT_EQ(parse_stream_request(
                fake_request(http::method::get, "/a?offset=-1&live=sse", {{"last-event-id", "now"}}).req)
                .request.offset->k,
            offset_param::kind::now);
  // Only an SSE session reads it (an EventSource is the one client that sends it by itself).
  fake_request lp(http::method::get, "/a?offset=-1&live=long-poll",
                  {{"Last-Event-ID", "0000000000000000_0000000000000042"}});
  EXPECT_EQ(parse_stream_request(lp.req).request.offset->k, offset_param::kind::start);
}

TEST(stream_request, a_bad_last_event_id_is_400) {
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?offset=-1&live=sse", {{"Last-Event-ID", "bogus"}})),
            errc::bad_last_event_id);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/a?offset=-1&live=sse", {{"Last-Event-ID", "1_2"}})),
            errc::bad_last_event_id);
  http_status s = status_for(errc::bad_last_event_id);
  EXPECT_EQ(s.code, 400);
  EXPECT_NE(s.reason.find("Last-Event-ID"), std::string_view::npos);
  EXPECT_NE(s.reason.find("-1"), std::string_view::npos);
}

// The server's own paths are not streams (a PUT /healthz would make a stream nobody could read), and a
// percent-encoded `__ds` (`%5f_ds`) is refused as the reserved segment itself is.
TEST(stream_request, server_and_reserved_paths_are_not_streams) {
  EXPECT_EQ(error_of(fake_request(http::method::put, "/healthz", {})), errc::server_path);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/%68ealthz", {})), errc::server_path);
  EXPECT_EQ(error_of(fake_request(http::method::post, "/metrics", {{"Content-Type", "t/p"}}, "x")),
            errc::server_path);
  EXPECT_EQ(error_of(fake_request(http::method::del, "/metrics/x", {})), errc::server_path);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/metrics", {})), errc::server_path_missing);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/healthzz", {})), errc::ok);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/v1/%5f_ds/subscriptions/s", {})),
            errc::encoded_reserved_path);
  EXPECT_EQ(error_of(fake_request(http::method::get, "/v1/%5F%5Fds", {})), errc::encoded_reserved_path);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/v1/__ds/x", {})), errc::reserved_path);
}

// `Content-Type: ;;;` is a malformed header (400), not a mismatch (409).
TEST(stream_request, malformed_content_type_is_400) {
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a", {{"Content-Type", ";;;"}})),
            errc::bad_content_type);
  EXPECT_EQ(error_of(fake_request(http::method::post, "/a", {{"Content-Type", ";;;"}}, "x")),
            errc::bad_content_type);
  // 5.2: a close-only append is never rejected for its Content-Type.
  EXPECT_EQ(
      error_of(fake_request(http::method::post, "/a", {{"Content-Type", ";;;"}, {"Stream-Closed", "true"}})),
      errc::ok);
}

// The Host header goes into Location, so it must be a plain host[:port].
TEST(stream_request, a_create_needs_a_plain_host) {
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a", {{"Host", "evil.example/x?"}})), errc::bad_host);
  EXPECT_EQ(error_of(fake_request(http::method::put, "/a", {{"Host", "user@evil.example"}})), errc::bad_host);
  parse_outcome ok =
      parse_stream_request(fake_request(http::method::put, "/a", {{"Host", "[::1]:4437"}}).req);
  EXPECT_EQ(ok.error, errc::ok);
  EXPECT_EQ(ok.request.origin, "http://[::1]:4437");
  // With a public URL configured, Host is not used for URLs at all.
  fake_request spoofed(http::method::put, "/a", {{"Host", "evil.example/x?"}});
  parse_outcome pub = parse_stream_request(spoofed.req, {1024, "https://streams.example"});
  EXPECT_EQ(pub.error, errc::ok);
  EXPECT_EQ(pub.request.origin, "https://streams.example");
  // A node serving HTTPS hands out https URLs made from Host.
  parse_outcome tls =
      parse_stream_request(fake_request(http::method::put, "/a", {{"Host", "h:4437"}}).req, {1024, "", true});
  EXPECT_EQ(tls.request.origin, "https://h:4437");
}

}  // namespace
}  // namespace weir::protocol

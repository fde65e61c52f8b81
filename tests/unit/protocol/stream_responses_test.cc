#include "protocol/stream_responses.h"

#include <gtest/gtest.h>

namespace weir::protocol {
namespace {

std::optional<std::string> find(const response& r, std::string_view name) {
  auto v = r.find(name);
  if (!v) return std::nullopt;
  return std::string(*v);
}

streams::stream_meta meta(bool closed = false, bool json = false) {
  streams::stream_meta m;
  m.path = "/s";
  m.generation = 7;
  m.content_type = json ? "application/json" : "text/plain";
  m.json = json;
  m.closed = closed;
  m.tail = streams::stream_offset(5);
  return m;
}

TEST(response, headers_keep_order_and_values_survive_moves) {
  response r;
  std::string dynamic = "a value long enough to leave the small-string buffer";
  r.add("X-Copied", dynamic);
  r.add_static("X-Static", "fixed");
  // More headers than are stored inline, with values that grow the copy buffer each time.
  for (int i = 0; i < 40; ++i) r.add(hdr::seq, std::string(static_cast<std::size_t>(i), 'x'));
  dynamic.assign(dynamic.size(), '?');  // the response holds its own copy
  response moved = std::move(r);
  response copy = moved;
  for (const response* x : {&moved, &copy}) {
    ASSERT_EQ(x->header_count(), 42u);
    EXPECT_EQ(x->value(0), "a value long enough to leave the small-string buffer");
    EXPECT_EQ(x->name(1), "X-Static");
    EXPECT_EQ(x->value(1), "fixed");
    for (std::size_t i = 0; i < 40; ++i) {
      EXPECT_EQ(x->name(i + 2), "Stream-Seq");
      EXPECT_EQ(x->value(i + 2), std::string(i, 'x'));
    }
    EXPECT_EQ(x->find("X-Static"), std::optional<std::string_view>("fixed"));
    EXPECT_FALSE(x->find("x-static"));
  }
}

// Access-Control-Allow-Origin is added when the response is sent (cors_test.cc, server/reply.cc).
TEST(stream_responses, every_response_has_security_and_cors_headers) {
  streams::outcome o;
  o.code = streams::errc::not_found;
  for (const response& r : {outcome_error(o), now_response(meta()), preflight_response()}) {
    EXPECT_EQ(find(r, "X-Content-Type-Options"), std::optional<std::string>("nosniff"));
    EXPECT_EQ(find(r, "Cross-Origin-Resource-Policy"), std::optional<std::string>("cross-origin"));
    EXPECT_NE(find(r, "Access-Control-Expose-Headers")->find("Stream-Next-Offset"), std::string::npos);
    EXPECT_FALSE(find(r, "Access-Control-Allow-Origin"));
  }
  EXPECT_NE(find(preflight_response(), "Access-Control-Allow-Headers")->find("If-None-Match"),
            std::string::npos);
}

TEST(stream_responses, closed_append_error_carries_offset_and_flag) {
  streams::outcome o;
  o.code = streams::errc::closed;
  o.meta = meta(true);
  response r = outcome_error(o);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(find(r, "Stream-Closed"), std::optional<std::string>("true"));
  EXPECT_EQ(find(r, "Stream-Next-Offset"), std::optional<std::string>("0000000000000000_0000000000000005"));
}

TEST(stream_responses, producer_errors) {
  streams::outcome stale;
  stale.code = streams::errc::stale_epoch;
  stale.producer_epoch = 4;
  response r = outcome_error(stale);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(find(r, "Producer-Epoch"), std::optional<std::string>("4"));
  streams::outcome gap;
  gap.code = streams::errc::seq_gap;
  gap.expected_seq = 3;
  gap.received_seq = 9;
  r = outcome_error(gap);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(find(r, "Producer-Expected-Seq"), std::optional<std::string>("3"));
  EXPECT_EQ(find(r, "Producer-Received-Seq"), std::optional<std::string>("9"));
}

TEST(stream_responses, append_statuses) {
  stream_request req;
  req.has_body = true;
  streams::outcome o;
  o.meta = meta();
  EXPECT_EQ(append_response(o, req).status, 204);
  req.producer = streams::producer_ref{"p", 0, 0};
  EXPECT_EQ(append_response(o, req).status, 200);
  o.duplicate = true;
  o.producer_seq = 3;
  response dup = append_response(o, req);
  EXPECT_EQ(dup.status, 204);
  EXPECT_EQ(find(dup, "Producer-Seq"), std::optional<std::string>("3"));
}

TEST(stream_responses, etag_varies_with_closure_and_304) {
  stream_request req;
  streams::read_result rr;
  rr.meta = meta();
  rr.plan.next = streams::stream_offset(5);
  rr.plan.up_to_date = true;
  response open = read_response(rr, req, std::nullopt);
  rr.meta = meta(true);
  response closed = read_response(rr, req, std::nullopt);
  EXPECT_NE(find(open, "ETag"), find(closed, "ETag"));
  EXPECT_EQ(find(closed, "Stream-Closed"), std::optional<std::string>("true"));
  req.if_none_match = find(closed, "ETag");
  EXPECT_EQ(read_response(rr, req, std::nullopt).status, 304);
  EXPECT_TRUE(etag_matches("\"a\", W/\"b\"", "\"b\""));
  EXPECT_FALSE(etag_matches("\"a\"", "\"b\""));
}

TEST(stream_responses, json_reads_and_now) {
  streams::read_result rr;
  rr.meta = meta(false, true);
  rr.plan.next = streams::stream_offset(5);
  EXPECT_EQ(read_response(rr, {}, std::nullopt).body, "[]");
  response now = now_response(meta(false, true));
  EXPECT_EQ(now.body, "[]");
  EXPECT_EQ(find(now, "Cache-Control"), std::optional<std::string>("no-store"));
  EXPECT_FALSE(find(now, "ETag").has_value());
}

TEST(stream_responses, long_poll_timeout_and_closed) {
  response open = long_poll_empty(meta(), streams::stream_offset(5), "12");
  EXPECT_EQ(open.status, 204);
  EXPECT_EQ(find(open, "Stream-Cursor"), std::optional<std::string>("12"));
  EXPECT_EQ(find(open, "Stream-Up-To-Date"), std::optional<std::string>("true"));
  response closed = long_poll_empty(meta(true), streams::stream_offset(5), "12");
  EXPECT_EQ(find(closed, "Stream-Closed"), std::optional<std::string>("true"));
}

TEST(stream_responses, status_mapping_is_total) {
  for (int e = 0; e <= static_cast<int>(streams::errc::path_held); ++e) {
    http_status s = status_for(static_cast<streams::errc>(e));
    EXPECT_GE(s.code, 200);
    EXPECT_LT(s.code, 500);
    EXPECT_FALSE(s.reason.empty());
  }
  for (int e = 0; e <= static_cast<int>(errc::stream_quota); ++e) {
    http_status s = status_for(static_cast<errc>(e));
    EXPECT_NE(s.code, 500) << e;  // the fallback: an errc without its own row
    EXPECT_LT(s.code, 600);
    EXPECT_FALSE(s.reason.empty());
    if (s.code == 405) {
      EXPECT_FALSE(s.allow.empty()) << e;  // RFC 9110 15.5.6
    }
  }
}

// A 405 lists the methods the resource allows (RFC 9110 15.5.6: Allow is required).
TEST(stream_responses, method_not_allowed_lists_the_methods) {
  response r = error_response(status_for(errc::method_not_allowed));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(find(r, "Allow"), std::optional<std::string>("GET, HEAD, POST, PUT, DELETE, OPTIONS"));
  response own = error_response(status_for(errc::server_path));
  EXPECT_EQ(own.status, 405);
  EXPECT_EQ(find(own, "Allow"), std::optional<std::string>("GET, HEAD"));
}

// A disk failure's reason ("open dir /path: Too many open files") must never reach a client.
TEST(stream_responses, storage_failures_name_no_internals) {
  for (replica::errc e :
       {replica::errc::storage_full, replica::errc::storage_unavailable, replica::errc::writes_backlogged}) {
    response r = error_response(status_for(e));
    EXPECT_TRUE(r.status == 503 || r.status == 507);
    EXPECT_EQ(find(r, "Retry-After"), std::optional<std::string>("1"));
    EXPECT_EQ(r.body.find('/'), std::string::npos) << r.body;
  }
  EXPECT_EQ(error_response(status_for(replica::errc::storage_unavailable)).body, "storage unavailable\n");
}

// Errors that teach: each says how to fix the request.
TEST(stream_responses, errors_say_how_to_fix_the_request) {
  std::string offset = error_response(status_for(errc::bad_offset)).body;
  EXPECT_NE(offset.find("-1"), std::string::npos) << offset;
  EXPECT_NE(offset.find("now"), std::string::npos) << offset;
  EXPECT_NE(offset.find("Stream-Next-Offset"), std::string::npos) << offset;

  stream_request req;
  req.has_body = true;
  req.has_content_type = true;
  req.content_type = "application/x-www-form-urlencoded";
  streams::outcome o;
  o.code = streams::errc::content_type_mismatch;
  o.meta = meta();
  response curl = append_response(o, req);
  EXPECT_EQ(curl.status, 409);
  EXPECT_NE(curl.body.find("the stream's Content-Type is text/plain"), std::string::npos) << curl.body;
  EXPECT_NE(curl.body.find("curl"), std::string::npos) << curl.body;
  EXPECT_NE(curl.body.find("-H 'Content-Type: text/plain'"), std::string::npos) << curl.body;
  req.content_type = "application/json";
  response other = append_response(o, req);
  EXPECT_NE(other.body.find("this request's is application/json"), std::string::npos) << other.body;
  EXPECT_EQ(other.body.find("curl"), std::string::npos) << other.body;

  streams::read_result found;
  found.meta = meta();
  response missing = missing_content_type(found);
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("Content-Type missing"), std::string::npos) << missing.body;
  EXPECT_NE(missing.body.find("text/plain"), std::string::npos) << missing.body;
  streams::read_result absent;
  absent.code = streams::errc::not_found;
  EXPECT_EQ(missing_content_type(absent).status, 400);

  streams::outcome held;
  held.code = streams::errc::deleted_with_forks;
  response put = create_response(held, {});
  EXPECT_EQ(put.status, 409);
  EXPECT_NE(put.body.find("deleted stream"), std::string::npos) << put.body;
  EXPECT_NE(put.body.find("forks"), std::string::npos) << put.body;
}

}  // namespace
}  // namespace weir::protocol

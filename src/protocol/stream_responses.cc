#include "protocol/stream_responses.h"

#include "protocol/json_mode.h"
#include "protocol/offset_token.h"
#include "protocol/sse_format.h"

namespace weir::protocol {

namespace {
response ok(int status) {
  response r;
  r.status = status;
  add_common_headers(r);
  return r;
}

void add_tail(response& r, const streams::stream_meta& m) {
  r.add(hdr::next_offset, offset_chars(m.tail).view());
}
}  // namespace

response outcome_error(const streams::outcome& o) {
  response r = error_response(status_for(o.code));
  switch (o.code) {
    case streams::errc::closed:
      // 5.2: clients detect the closed stream without parsing the body.
      r.add_static(hdr::closed, "true");
      if (o.meta) add_tail(r, *o.meta);
      break;
    case streams::errc::stale_epoch:
      r.add(hdr::producer_epoch, std::to_string(o.producer_epoch));
      break;
    case streams::errc::seq_gap:
      r.add(hdr::producer_expected_seq, std::to_string(o.expected_seq));
      r.add(hdr::producer_received_seq, std::to_string(o.received_seq));
      break;
    default:
      break;
  }
  return r;
}

response create_response(const streams::outcome& o, const stream_request& req) {
  if (o.code != streams::errc::ok) return outcome_error(o);
  const streams::stream_meta& m = *o.meta;
  response r = ok(o.created ? 201 : 200);
  r.add("Content-Type", m.content_type);
  add_tail(r, m);
  if (m.closed) r.add_static(hdr::closed, "true");
  if (o.created)
    r.add("Location", (req.origin.empty() ? std::string("http://localhost") : req.origin) + req.path);
  return r;
}

namespace {
// What a client needs to fix an append whose Content-Type differs from the stream's: both types, and
// the usual cause (curl -d sends application/x-www-form-urlencoded unless told otherwise).
std::string explain_content_type(std::string_view sent, std::string_view stream_type) {
  std::string why =
      "the stream's Content-Type is " + std::string(stream_type) + ", this request's is " + std::string(sent);
  if (streams::same_media_type(sent, "application/x-www-form-urlencoded")) {
    why += " (curl's default for -d: add -H 'Content-Type: " + std::string(stream_type) + "')";
  }
  return why;
}
}  // namespace

response append_response(const streams::outcome& o, const stream_request& req) {
  if (o.code == streams::errc::content_type_mismatch && o.meta) {
    return error_response(status_for(o.code), explain_content_type(req.content_type, o.meta->content_type));
  }
  if (o.code != streams::errc::ok) return outcome_error(o);
  const streams::stream_meta& m = *o.meta;
  // 5.2.1: an accepted producer append is 200; duplicates, plain appends and closes are 204.
  bool producer_accepted = req.producer && !o.duplicate && req.has_body;
  response r = ok(producer_accepted ? 200 : 204);
  add_tail(r, m);
  if (m.closed) r.add_static(hdr::closed, "true");
  if (req.producer) {
    r.add(hdr::producer_epoch, std::to_string(o.producer_epoch));
    r.add(hdr::producer_seq, std::to_string(o.producer_seq));
  }
  return r;
}

response missing_content_type(const streams::read_result& stream) {
  http_status s = status_for(errc::missing_content_type);
  if (stream.code != streams::errc::ok || !stream.meta) return error_response(s);
  return error_response(s, "this stream's is " + stream.meta->content_type);
}

response delete_response(const streams::outcome& o) {
  if (o.code != streams::errc::ok) return outcome_error(o);
  return ok(204);
}

response head_response(const streams::read_result& rr) {
  if (rr.code != streams::errc::ok) {
    response r = error_response(status_for(rr.code));
    r.body.clear();
    return r;
  }
  const streams::stream_meta& m = *rr.meta;
  response r = ok(200);
  r.add("Content-Type", m.content_type);
  add_tail(r, m);
  if (m.closed) r.add_static(hdr::closed, "true");
  if (m.expiry.ttl_seconds) r.add(hdr::ttl, std::to_string(*m.expiry.ttl_seconds));
  if (m.expiry.expires_at_ms) r.add(hdr::expires_at, m.expiry.expires_at_text);
  r.add_static("Cache-Control", "no-store");  // 5.5: tail and closure must not be stale
  r.add("ETag", make_etag(m.generation, "-1", m.tail, m.closed));
  return r;
}

std::string read_body(const streams::stream_meta& meta, const streams::read_plan& plan) {
  if (meta.json) return json_array(plan.slices);
  std::string body;
  body.reserve(plan.bytes);
  for (const auto& s : plan.slices) body.append(s.view());
  return body;
}

response read_response(const streams::read_result& rr, const stream_request& req,
                       std::optional<std::string> cursor) {
  if (rr.code != streams::errc::ok) return error_response(status_for(rr.code));
  const streams::stream_meta& m = *rr.meta;
  const streams::read_plan& p = rr.plan;
  // 5.6: Stream-Closed only when the client reached the final offset of a closed stream.
  bool closed = m.closed && p.up_to_date;
  std::string etag = make_etag(m.generation, req.offset_text, p.next, closed);
  if (req.if_none_match && etag_matches(*req.if_none_match, etag)) {
    response r = ok(304);
    r.add("ETag", etag);
    return r;
  }
  response r = ok(200);
  r.add("Content-Type", m.content_type);
  r.add(hdr::next_offset, offset_chars(p.next).view());
  if (p.up_to_date) r.add_static(hdr::up_to_date, "true");
  if (closed) r.add_static(hdr::closed, "true");
  if (cursor && !closed) r.add(hdr::cursor, *cursor);
  r.add("ETag", etag);
  r.add_static("Cache-Control", cache_catch_up);
  r.body = read_body(m, p);
  return r;
}

response now_response(const streams::stream_meta& m) {
  response r = ok(200);
  r.add("Content-Type", m.content_type);
  add_tail(r, m);
  r.add_static(hdr::up_to_date, "true");
  if (m.closed) r.add_static(hdr::closed, "true");
  r.add_static("Cache-Control", "no-store");
  r.body = m.json ? "[]" : "";
  return r;
}

response long_poll_empty(const streams::stream_meta& m, streams::stream_offset offset,
                         const std::string& cursor) {
  response r = ok(204);
  r.add(hdr::next_offset, offset_chars(offset).view());
  r.add_static(hdr::up_to_date, "true");
  if (m.closed && offset == m.tail) {
    r.add_static(hdr::closed, "true");
  } else {
    r.add(hdr::cursor, cursor);
  }
  r.add_static("Cache-Control", "no-store");
  return r;
}

response sse_head(const streams::stream_meta& m) {
  response r = ok(200);
  r.add_static("Content-Type", "text/event-stream");
  r.add_static("Cache-Control", "no-cache");
  if (sse_needs_base64(m.content_type)) r.add_static(hdr::sse_encoding, "base64");
  return r;
}

}  // namespace weir::protocol

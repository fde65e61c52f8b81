#include "protocol/stream_request.h"

#include "protocol/header_values.h"
#include "protocol/response.h"

namespace weir::protocol {

namespace {
std::optional<std::string_view> header(const http::request& req, std::string_view name) {
  const http::header* h = req.find(name);
  if (!h) return std::nullopt;
  return h->value;
}
}  // namespace

parse_outcome parse_stream_request(const http::request& req, const request_limits& limits) {
  parse_outcome out;
  stream_request& r = out.request;
  auto fail = [&](errc e) {
    out.error = e;
    return out;
  };

  switch (req.method()) {
    case http::method::put:
      r.op = operation::create;
      break;
    case http::method::post:
      r.op = operation::append;
      break;
    case http::method::get:
      r.op = operation::read;
      break;
    case http::method::head:
      r.op = operation::head;
      break;
    case http::method::del:
      r.op = operation::remove;
      break;
    case http::method::options:
      r.op = operation::preflight;
      return out;
    default:
      return fail(errc::method_not_allowed);
  }
  switch (check_stream_path(req.path(), limits.max_path_length)) {
    case path_check::ok:
      break;
    case path_check::bad:
      return fail(errc::bad_path);
    case path_check::too_long:
      return fail(errc::path_too_long);
  }
  r.path = std::string(req.path());
  {
    // Checked on the decoded path, so that an escape cannot hide a reserved name (`%5f_ds`).
    std::string_view root, rest;
    // A path without escapes is its own decoding (the usual case: no copy per request).
    std::optional<std::string> decoded_copy;
    std::string_view decoded = r.path;
    if (r.path.find('%') != std::string::npos) {
      decoded_copy = percent_decode(r.path, false);  // valid: checked above
      decoded = *decoded_copy;
    }
    if (split_reserved_path(r.path, root, rest)) return fail(errc::reserved_path);
    if (has_reserved_segment(decoded)) return fail(errc::encoded_reserved_path);
    if (is_server_path(decoded)) {
      return fail(r.op == operation::read || r.op == operation::head ? errc::server_path_missing
                                                                     : errc::server_path);
    }
  }
  if (r.op == operation::create) {
    // Location: the configured public URL, else the Host the client addressed if it is a plain
    // host[:port] (never copied unchecked into a URL).
    auto host = header(req, "host");
    if (!limits.public_url.empty()) {
      r.origin = std::string(limits.public_url);
    } else if (!host) {
      r.origin = limits.https ? "https://localhost" : "http://localhost";
    } else if (valid_url_host(*host)) {
      r.origin = (limits.https ? "https://" : "http://") + std::string(*host);
    } else {
      return fail(errc::bad_host);
    }
  }
  if (auto ct = header(req, "content-type"); ct && !ct->empty()) {
    // Stored with the stream: bounded like everything a client can make the server keep.
    if (ct->size() > max_content_type_bytes) return fail(errc::content_type_too_long);
    // RFC 9110 8.3.1; PROTOCOL.md 5.2: 409 only when the type "is valid but does not match". An append
    // without a body ignores Content-Type (5.2: close-only requests must not be rejected for it).
    bool checked = r.op == operation::create || (r.op == operation::append && !req.body.empty());
    if (checked && !valid_media_type(*ct)) return fail(errc::bad_content_type);
    r.content_type = std::string(*ct);
    r.has_content_type = true;
  }
  if (auto c = header(req, hdr::closed)) r.closed = is_true(*c);

  if (r.op == operation::create) {
    auto ttl = header(req, hdr::ttl);
    auto exp = header(req, hdr::expires_at);
    if (ttl && exp) return fail(errc::ttl_and_expires_at);
    if (ttl) {
      auto v = parse_ttl(*ttl);
      if (!v) return fail(errc::bad_ttl);
      r.expiry.ttl_seconds = *v;
    }
    if (exp) {
      auto v = parse_rfc3339_ms(*exp);
      if (!v) return fail(errc::bad_expires_at);
      r.expiry.expires_at_ms = *v;
      r.expiry.expires_at_text = std::string(*exp);
    }
    auto from = header(req, hdr::forked_from);
    auto fork_offset = header(req, hdr::fork_offset);
    auto sub = header(req, hdr::fork_sub_offset);
    if (sub && !from) return fail(errc::sub_offset_without_fork);
    if (from) {
      fork_request f;
      f.source = std::string(*from);
      if (check_stream_path(f.source, limits.max_path_length) != path_check::ok) return fail(errc::bad_path);
      if (fork_offset) {
        auto o = parse_offset_token(*fork_offset);
        if (!o) return fail(errc::bad_fork_offset);
        f.offset = *o;
      }
      if (sub) {
        auto s = parse_sub_offset(*sub);
        if (!s) return fail(errc::bad_sub_offset);
        f.sub_offset = *s;
        if (f.sub_offset > 0 && !fork_offset) return fail(errc::sub_offset_without_offset);
      }
      r.fork = std::move(f);
    }
  }

  if (r.op == operation::append) {
    if (auto seq = header(req, hdr::seq)) r.stream_seq = std::string(*seq);
    auto id = header(req, hdr::producer_id);
    auto epoch = header(req, hdr::producer_epoch);
    auto seq = header(req, hdr::producer_seq);
    if (id || epoch || seq) {
      if (!id || !epoch || !seq) return fail(errc::bad_producer);  // 5.2.1: all three or none
      if (id->empty()) return fail(errc::empty_producer_id);
      if (id->size() > max_producer_id_bytes) return fail(errc::producer_id_too_long);
      auto e = parse_producer_number(*epoch);
      auto s = parse_producer_number(*seq);
      if (!e || !s) return fail(errc::bad_producer);
      r.producer = streams::producer_ref{std::string(*id), *e, *s};
    }
    if (req.body.empty() && !r.closed) return fail(errc::empty_body);  // 5.2
    // A body without Content-Type is refused by the stream's owner, which can name the stream's type.
  }

  if (r.op == operation::read) {
    auto params = parse_query(req.query());
    if (!params) return fail(errc::bad_offset);
    bool seen_offset = false;
    for (auto& p : *params) {
      if (p.name == "offset") {
        if (seen_offset || p.value.empty()) return fail(errc::bad_offset);
        seen_offset = true;
        auto o = parse_offset_param(p.value);
        if (!o) return fail(errc::bad_offset);
        r.offset = *o;
        r.offset_text = p.value;
      } else if (p.name == "live") {
        if (p.value == "long-poll") {
          r.live = live_mode::long_poll;
        } else if (p.value == "sse") {
          r.live = live_mode::sse;
        } else {
          return fail(errc::bad_live);
        }
      } else if (p.name == "cursor") {
        r.cursor = std::move(p.value);
      }
      // 11.1: unknown parameters are ignored.
    }
    if (r.live != live_mode::none && !seen_offset) return fail(errc::live_needs_offset);
    // WHATWG HTML 9.2.4: an EventSource that reconnects by itself sends the id of the last event it
    // dispatched, and asks again for its original URL (often offset=-1). weir's ids are offsets, so
    // the header wins over the URL's offset: the session resumes after that event.
    if (r.live == live_mode::sse) {
      if (auto last = header(req, "last-event-id")) {
        auto o = parse_offset_param(*last);
        if (!o) return fail(errc::bad_last_event_id);
        r.offset = *o;
        r.offset_text = std::string(*last);
      }
    }
    if (auto inm = header(req, "if-none-match")) r.if_none_match = std::string(*inm);
  }

  if (r.op == operation::create || r.op == operation::append) {
    r.has_body = !req.body.empty();
    if (r.op == operation::create && r.fork && !r.has_content_type) {
      r.raw_body = std::string(req.body);
    } else {
      r.payload = make_payload(req.body, r.has_content_type ? std::string_view(r.content_type)
                                                            : std::string_view("application/octet-stream"));
    }
  }
  return out;
}

}  // namespace weir::protocol

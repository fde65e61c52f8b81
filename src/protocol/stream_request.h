// stream_request: an HTTP request on a stream URL, validated and copied out of the connection's
// buffers (so it can travel to the stream's owner core). Header syntax errors are found here, before
// any stream is touched (PROTOCOL.md 5.1, 5.2, 5.2.1, 5.6-5.8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "base/result.h"
#include "http/exchange.h"
#include "protocol/cors.h"
#include "protocol/errors.h"
#include "protocol/json_mode.h"
#include "protocol/offset_token.h"
#include "streams/command.h"

namespace weir::protocol {

enum class operation : std::uint8_t { create, append, read, head, remove, preflight };
enum class live_mode : std::uint8_t { none, long_poll, sse };

struct fork_request {
  std::string source;
  std::optional<streams::stream_offset> offset;
  std::uint64_t sub_offset = 0;
};

struct stream_request {
  operation op = operation::read;
  std::string path;
  std::string origin;  // scheme://host[:port] that Location starts with (request_limits::public_url or Host)
  cors_grant cors;     // what the request's Origin earned (set by the server, not parsed here)

  // create
  std::string content_type;  // as sent ("" when absent)
  bool has_content_type = false;
  streams::expiry_config expiry;
  bool closed = false;  // Stream-Closed: true
  std::optional<fork_request> fork;

  // append
  std::optional<std::string> stream_seq;
  std::optional<streams::producer_ref> producer;

  // read
  std::optional<offset_param> offset;  // absent: from the start
  std::string offset_text = "-1";
  live_mode live = live_mode::none;
  std::optional<std::string> cursor;
  std::optional<std::string> if_none_match;

  // The body, processed on the connection's core: JSON validation and flattening when the content
  // type that applies is application/json (the request's, or the default for a create). A fork
  // without a Content-Type inherits its source's type, known only later: its body stays raw in
  // `raw_body` until then.
  streams::payload payload;
  std::string raw_body;
  bool has_body = false;
};

struct request_limits {
  std::size_t max_path_length = 1024;
  // The server's public URL (serve_config::public_url, a valid_origin) or "": URLs from each Host.
  std::string_view public_url;
  // The node serves HTTPS (tls-cert): URLs made from Host say https.
  bool https = false;
};

// The validated request, or the protocol error to answer with.
struct parse_outcome {
  errc error = errc::ok;
  stream_request request;
};
parse_outcome parse_stream_request(const http::request& req, const request_limits& limits = {});

}  // namespace weir::protocol

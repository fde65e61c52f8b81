// Errors of the protocol layer (request validation) and the single place where every error that
// reaches a client becomes an HTTP status with a short plain-text reason (STYLE.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "replica/errc.h"
#include "streams/state_machine.h"

namespace weir::protocol {

enum class errc : std::uint8_t {
  ok = 0,
  bad_path,  // traversal, control characters, not absolute
  path_too_long,
  method_not_allowed,
  bad_offset,         // malformed, empty or repeated offset parameter
  live_needs_offset,  // long-poll / SSE without offset
  bad_live,           // unknown live mode
  bad_ttl,
  bad_expires_at,
  ttl_and_expires_at,
  bad_producer,  // malformed or partial Producer-* headers
  empty_producer_id,
  empty_body,            // POST with no body and no Stream-Closed
  missing_content_type,  // POST with a body but no Content-Type
  bad_fork_offset,
  bad_sub_offset,
  sub_offset_without_fork,
  sub_offset_without_offset,
  reserved_path,  // a `__ds` path when subscriptions are not available
  body_too_large,
  encoded_reserved_path,  // a percent-encoded `__ds` segment (PROTOCOL.md 6: routed before streams)
  server_path,            // a stream operation on the server's own paths (/healthz, /metrics)
  server_path_missing,    // a read of a server path that this build does not serve
  bad_content_type,       // Content-Type that is not a media type (RFC 9110 8.3.1)
  bad_host,               // a Host that cannot be copied into a URL (Location, callback_url)
  // Access control (src/auth, docs/security.md; RFC 6750 3.1 names the error attributes).
  token_missing,          // no bearer token where one is needed: 401
  token_invalid,          // a token that is malformed, expired, unknown or badly signed: 401
  token_request_invalid,  // two tokens, or a query token on another method than GET: 400
  access_denied,          // a valid token whose scope does not cover the request: 403
  producer_id_too_long,   // Producer-Id beyond max_producer_id_bytes
  content_type_too_long,  // Content-Type beyond max_content_type_bytes
  stream_quota,           // the node holds max-streams streams already
  bad_last_event_id,      // an SSE Last-Event-ID that is not an offset
};

// What a client can make the server keep per request is bounded (docs/limits.md): each limit is answered
// with a 4xx naming it.
inline constexpr std::size_t max_producer_id_bytes = 256;
inline constexpr std::size_t max_content_type_bytes = 256;

struct http_status {
  int code;
  std::string_view reason;
  // Headers that belong to the status: Allow (RFC 9110 15.5.6: a 405 MUST have it) and Retry-After.
  std::string_view allow = {};
  std::string_view retry_after = {};
  std::string_view www_authenticate = {};  // RFC 9110 11.6.1: a 401 MUST have it
};

// RFC 9110 10.2.1: the methods a stream path supports.
inline constexpr std::string_view stream_methods = "GET, HEAD, POST, PUT, DELETE, OPTIONS";

http_status status_for(errc e);
http_status status_for(streams::errc e);
// The partition's failures: a full or failed disk, a backlog, a cluster without quorum.
http_status status_for(replica::errc e);

// The 4xx for a create, append or delete on one of the server's own paths (see is_server_path).
inline constexpr std::string_view server_path_methods = "GET, HEAD";

}  // namespace weir::protocol

// Errors of the protocol layer (request validation) and the single place where every error that
// reaches a client becomes an HTTP status with a short plain-text reason (STYLE.md).
#pragma once

#include <cstdint>
#include <string_view>

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
};

struct http_status {
  int code;
  std::string_view reason;
};

http_status status_for(errc e);
http_status status_for(streams::errc e);

}  // namespace weir::protocol

// stream_responses: state machine outcomes and read plans turned into HTTP responses (PROTOCOL.md
// 5.1-5.8, 10). Pure functions; the server calls them on the stream's owner core.
#pragma once

#include <optional>
#include <string>

#include "protocol/response.h"
#include "protocol/stream_request.h"
#include "streams/state_machine.h"

namespace weir::protocol {

// An error outcome of any command, with the extra headers its status needs (5.2, 5.2.1).
response outcome_error(const streams::outcome& o);

response create_response(const streams::outcome& o, const stream_request& req);
response append_response(const streams::outcome& o, const stream_request& req);
response delete_response(const streams::outcome& o);

// An append with a body but no Content-Type (5.2: 400), naming the stream's type when `stream` found it.
response missing_content_type(const streams::read_result& stream);
response head_response(const streams::read_result& r);

// The body of a read: the JSON array form for JSON streams, the bytes otherwise.
std::string read_body(const streams::stream_meta& meta, const streams::read_plan& plan);

// A catch-up (or long-poll with data) read: 200, or 304 when If-None-Match matches. `cursor` is set
// for long-poll answers (5.7).
response read_response(const streams::read_result& r, const stream_request& req,
                       std::optional<std::string> cursor);

// offset=now without live mode (8): an empty answer at the tail, never cached.
response now_response(const streams::stream_meta& meta);

// Long-poll without data (5.7): 204 at `offset`; closed streams say so (and need no cursor).
response long_poll_empty(const streams::stream_meta& meta, streams::stream_offset offset,
                         const std::string& cursor);

// The SSE response head (5.8).
response sse_head(const streams::stream_meta& meta);

}  // namespace weir::protocol

// Sending a protocol::response through an exchange from whichever core built it: the exchange may only
// be used on its connection's core, so the answer hops there when needed.
#pragma once

#include <functional>
#include <string>

#include "http/exchange.h"
#include "protocol/cors.h"
#include "protocol/response.h"
#include "protocol/stream_request.h"
#include "streams/state_machine.h"

namespace weir::server {

// Answers `ex` with `r` (on ex.loop(), posting if called from another core), adding the CORS headers
// its request earned (protocol::add_cors_headers: every response to a browser goes through here).
// The default grant, "*", is for what no browser page reads with credentials (/metrics).
void send_response(http::exchange ex, protocol::response r, const protocol::cors_grant& cors = {});

// Answers a read (catch-up or long-poll) with protocol::read_response, with req.cors. A body larger than
// `inline_up_to` (the server's read chunk: only a JSON record larger than the chunk, which is read whole)
// is not copied: it is written from the plan's shared, immutable chunks one window at a time as the
// connection drains (chunked transfer coding), so N readers of a 16 MiB record that do not read hold N
// windows, not N copies. Every other read is answered at once with a Content-Length.
void send_read_response(http::exchange ex, const streams::read_result& rr,
                        const protocol::stream_request& req, std::optional<std::string> cursor,
                        std::size_t inline_up_to);

// Streamed responses (SSE): head, chunks and end, each delivered on ex.loop() in call order.
void send_stream_head(http::exchange ex, protocol::response head, const protocol::cors_grant& cors);
void send_stream_chunk(http::exchange ex, std::string data, bool end);

// Flow control for streamed responses: writes `data` on ex.loop(), then calls `drained` there once at
// most `low_water` bytes of the connection's output wait to be sent (http::exchange::on_drain). Not
// called when the exchange is gone (its on_close tells that).
void send_stream_chunk_when_drained(http::exchange ex, std::string data, std::size_t low_water,
                                    std::function<void()> drained);

}  // namespace weir::server

// Sending a protocol::response through an exchange from whichever core built it: the exchange may only
// be used on its connection's core, so the answer hops there when needed.
#pragma once

#include <functional>
#include <string>

#include "http/exchange.h"
#include "protocol/response.h"

namespace weir::server {

// Answers `ex` with `r` (on ex.loop(), posting if called from another core).
void send_response(http::exchange ex, protocol::response r);

// Streamed responses (SSE): head, chunks and end, each delivered on ex.loop() in call order.
void send_stream_head(http::exchange ex, protocol::response head);
void send_stream_chunk(http::exchange ex, std::string data, bool end);

// Flow control for streamed responses: writes `data` on ex.loop(), then calls `drained` there once at
// most `low_water` bytes of the connection's output wait to be sent (http::exchange::on_drain). Not
// called when the exchange is gone (its on_close tells that).
void send_stream_chunk_when_drained(http::exchange ex, std::string data, std::size_t low_water,
                                    std::function<void()> drained);

}  // namespace weir::server

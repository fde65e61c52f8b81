// Live readers (PROTOCOL.md 5.7, 5.8): a long-poll waiting for data, or an SSE session. They live on
// the stream's owner core, registered with its stream_shard, and are woken when an append or a close
// commits (wake), when the stream goes away (gone), or at shutdown (stop).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "http/exchange.h"
#include "protocol/stream_request.h"
#include "streams/types.h"

namespace weir::server {

class stream_shard;

class live_reader : public std::enable_shared_from_this<live_reader> {
 public:
  virtual ~live_reader() = default;
  virtual void wake() = 0;
  virtual void gone() = 0;
  virtual void stop() = 0;
  virtual void cancel() = 0;  // the client went away
};

// Waits at `at` (the tail when it started) until data, closure, removal or the timeout.
std::shared_ptr<live_reader> start_long_poll(stream_shard& shard, protocol::stream_request req,
                                             http::exchange ex, streams::stream_offset at,
                                             std::uint64_t live_id);

// Streams from `at`: catch-up, then live, until the stream closes, the client leaves or the ~60 s
// lifetime ends.
std::shared_ptr<live_reader> start_sse(stream_shard& shard, protocol::stream_request req, http::exchange ex,
                                       streams::stream_offset at, std::uint64_t live_id);

}  // namespace weir::server

// sse_batch_reader: turns the SSE body of a Durable Streams live read (PROTOCOL.md 5.8) into batches:
// the data events up to a control event, together with that control event's offset. A batch is the unit
// `read --follow` prints, so that what it prints and the offset it resumes from always agree: data whose
// control event never arrived (the connection broke in between) is not printed, and is sent again by the
// next connection, which starts at the last control event's offset. Pure: bytes in, batches out.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "base/result.h"
#include "client/sse_event_parser.h"

namespace weir::cli {

struct sse_batch {
  std::vector<std::string> events;  // each data event's payload (base64 already decoded)
  std::string next_offset;          // streamNextOffset
  bool up_to_date = false;
  bool closed = false;  // streamClosed: the last batch; the server ends the connection
};

class sse_batch_reader {
 public:
  // `base64`: the response carried `stream-sse-data-encoding: base64` (a binary stream).
  explicit sse_batch_reader(bool base64) : base64_(base64) {}

  // Feeds body bytes in pieces of any size; calls on_batch once per control event. An error (an event
  // too large, a control event without streamNextOffset, bad base64) leaves the reader failed.
  status feed(std::string_view body, const std::function<void(sse_batch&)>& on_batch);

  // Data events received that no control event has confirmed yet.
  bool has_unconfirmed() const { return !pending_.events.empty(); }

 private:
  void on_event(const client::sse_event& e, const std::function<void(sse_batch&)>& on_batch);

  client::sse_event_parser parser_;
  simdjson::dom::parser json_;
  bool base64_;
  sse_batch pending_;
  std::string error_;
};

}  // namespace weir::cli

// sse_workload: the live-tail measurement. For each of C streams, `sse_readers` SSE subscriptions
// (PROTOCOL.md 5.8, GET ?offset=..&live=sse) and one writer that appends `sse_count` events of
// `sse_payload_bytes`, paced: the next append goes out `interval` after the previous one, or when its
// response arrives if that is later. Each event carries a tag "#<stream>:<index>;" padded with '.', so
// a reader knows which append it sees even when the server batches several into one SSE data event.
// Append-to-delivery latency is the delivery time minus the send time, both on this process's monotonic
// clock. Missing, duplicated, misrouted or malformed events and dropped subscriptions are errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/latency_histogram.h"
#include "bench/phase_driver.h"

namespace weir::bench {

struct sse_stream {
  std::string name;
  std::string start_offset;  // where the subscriptions start ("-1" when unknown)
};

struct sse_config {
  std::string label;  // progress prefix
  std::size_t payload_bytes = 512;
  unsigned event_count = 100;
  unsigned readers_per_stream = 3;
  unsigned interval_ms = 10;
  unsigned request_timeout_ms = 30'000;
  unsigned delivery_timeout_ms = 10'000;  // after the last append, how long to wait for stragglers
  std::string error_prefix = "sse";       // error kinds are "<prefix>.<kind>"
};

struct sse_outcome {
  latency_histogram latency;
  std::uint64_t delivered = 0;   // distinct (reader, event) pairs
  std::uint64_t expected = 0;    // readers x events
  std::uint64_t lost = 0;        // expected - delivered (also counted as "<prefix>.missing")
  std::uint64_t duplicated = 0;  // deliveries of an event a reader already had ("<prefix>.duplicate")
  phase_cpu cpu;
};

// The event payload for (stream, index), exactly `size` bytes; exposed for tests.
std::string sse_event_payload(std::size_t stream, std::size_t index, std::size_t size);
// Parses one payload's tag; false when it is not one of ours.
bool parse_sse_event_tag(std::string_view payload, std::size_t& stream, std::size_t& index);
// The streamNextOffset of a control event's JSON (PROTOCOL.md 5.8), or "" if absent.
std::string sse_control_next_offset(std::string_view control);

sse_outcome run_sse_workload(const target_spec& target, const std::vector<sse_stream>& streams,
                             const sse_config& cfg, run_result& result, progress_line& progress);

}  // namespace weir::bench

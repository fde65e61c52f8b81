// request_loop: N closed-loop workers, each on its own keep-alive connection, each sending its request
// again as soon as the previous response arrived, until a count or a deadline. Used by the append,
// write, catch-up read and small-event workloads, and to create and delete streams.
//
// Every response is judged by the caller's check(); anything that is not ok (transport error, timeout,
// wrong status, wrong length) is counted under "<phase>.<kind>" in the run's error_kinds, never dropped.
// Only ok responses that completed before the deadline count towards throughput and latency.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/latency_histogram.h"
#include "bench/phase_driver.h"
#include "client/http_connection.h"

namespace weir::bench {

// The HTTP client is weir_client (src/client), shared with `weir stream`.
using client::format_request_head;
using client::http_connection;
using client::http_response;
using client::mono_ns;

struct loop_worker {
  endpoint ep;
  std::vector<std::string> heads;  // request heads, sent in turn (round robin)
  std::string_view body;           // the same body for every request (may be empty)
  bool with_body = false;
};

struct loop_config {
  std::string phase;                          // error-kind prefix and progress label, e.g. "write"
  std::string label;                          // progress prefix, e.g. "[weir c=16]"
  double duration_s = 0;                      // 0: no deadline (use max_requests)
  std::uint64_t max_requests_per_worker = 0;  // 0: no limit (use duration_s)
  std::uint64_t request_timeout_ms = 30'000;
  bool keep_body = false;  // hand check() the body
  // Returns "" when the response is what was expected, else an error kind ("status", "length", ...).
  // `index` counts the worker's requests from 0.
  std::function<std::string(const http_response&, std::size_t worker, std::uint64_t index)> check;
  // Optional: a worker that is done early (e.g. a stream became visible) stops sending.
  std::function<bool(std::size_t worker)> worker_done;
  std::uint64_t retry_delay_ms = 0;  // pause between a worker's requests (polling), 0: none
  // Optional: continue the same operation with another request (`next_head`), given the last response
  // and the body bytes of the operation so far. check() then judges the whole operation.
  std::function<bool(const http_response& last, std::uint64_t body_so_far, std::size_t worker,
                     std::string& next_head)>
      follow;
  unsigned max_hops = 4096;  // requests per operation, at most
};

struct loop_outcome {
  std::uint64_t ok = 0;              // ok responses before the deadline
  std::uint64_t sent_bytes = 0;      // request body bytes of those
  std::uint64_t received_bytes = 0;  // response body bytes of those
  std::uint64_t errors = 0;
  std::uint64_t follow_requests = 0;  // requests beyond the first of each operation
  latency_histogram latency;          // of those
  double elapsed_s = 0;               // the deadline, or the last completion when there is none
  phase_cpu cpu;
  bool cut_short = false;  // the hard bound stopped it
};

loop_outcome run_request_loop(std::vector<loop_worker>& workers, const loop_config& cfg, run_result& result,
                              progress_line& progress);

}  // namespace weir::bench

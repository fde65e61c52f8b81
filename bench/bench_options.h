// bench_options: what `weir bench` measures and against whom, parsed from the command line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "bench/workload_options.h"
#include "client/endpoint.h"

namespace weir::bench {

// The HTTP client's base URL (client/endpoint.h), under bench's own names.
using client::endpoint;
using client::parse_endpoint;

// One server under test, at one or more base URLs: the nodes of a cluster, any of which takes any
// request. A workload's connection number i goes to base(i) (round robin per connection), and every
// request on that connection uses that base, so a stream is created, appended to and deleted through
// one node while the workload as a whole spreads over all of them.
struct target_spec {
  std::string name;
  std::vector<endpoint> bases;       // never empty (parse_target)
  std::vector<endpoint> read_bases;  // catch-up reads and SSE are spread over these (default: `bases`)
  // redis://HOST:PORT: a Redis server, which only the saturation workload drives (XADD, the Redis Streams
  // counterpart of an append); every URL of the target must then be redis://.
  bool redis = false;

  const endpoint& base(std::size_t connection) const { return bases[connection % bases.size()]; }
  const endpoint& read_base(std::size_t connection) const {
    const auto& r = read_bases.empty() ? bases : read_bases;
    return r[connection % r.size()];
  }
  // "URL" or "URL,URL,...", for the report.
  std::string urls() const;
};

struct bench_options {
  std::vector<target_spec> targets;
  std::vector<unsigned> concurrency = {4, 8, 16, 32, 64, 128, 256};
  std::size_t payload_bytes = 8192;
  std::size_t small_payload_bytes = 1024;
  std::size_t read_payload_bytes = 524288;
  std::size_t sse_payload_bytes = 512;
  unsigned latency_count = 100;
  double throughput_secs = 15;
  unsigned sse_count = 100;
  unsigned sse_readers = 3;
  unsigned sse_interval_ms = 10;  // pacing of each SSE stream's appends
  std::string out = "bench-results";
  unsigned request_timeout_ms = 30'000;  // a request without a response by then is an error
  unsigned sse_timeout_ms = 10'000;      // an event not delivered by then is missing
  // Before each target's step, wait up to this long until every server with a known PID
  // (--server-pid) is idle (proc_sampler.h, wait_until_idle); 0: do not wait.
  double settle_secs = 30;
  std::string command;    // the command line, for the report
  workload_options work;  // which workloads, and the new workloads' sizes
};

// "NAME=URL" or "NAME=URL,URL,..." (the nodes of one cluster)
result<target_spec> parse_target(std::string_view spec);
// "NAME=URL,URL,..." applied to the target called NAME in `targets`.
status apply_read_bases(std::string_view spec, std::vector<target_spec>& targets);
// "4,8,16": positive, strictly increasing.
result<std::vector<unsigned>> parse_concurrency(std::string_view list);
// Checks ranges (sizes > 0, SSE payload big enough for its event tag, ...).
status validate(const bench_options& o);

}  // namespace weir::bench

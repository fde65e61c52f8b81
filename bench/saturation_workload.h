// saturation_workload: the write-throughput ceiling the way electric-sql/ds-bench measures Durable
// Streams servers. N streams are created first; then every stream has one idempotent producer
// (Producer-Id, Producer-Epoch 0, Producer-Seq counting up: PROTOCOL.md "Idempotent producers") writing
// `append_bytes` binary appends as fast as the server answers, over a ladder of connection counts
// (connection c writes streams c, c+C, c+2C, ... in turn, one request at a time, so that a stream never
// has two appends in flight). Each step runs `warmup_secs`, then is measured for `secs`; the ladder
// stops once a step adds no more than `plateau` (e.g. 5%) over the one before. The ceiling is the step
// with the most appends per second; its p50/p99/p999, the server's CPU per append and memory (RSS, and
// the cgroup working set when the server has a cgroup of its own) and the generator's own CPU per append
// and loop lag are reported with it, so a reader can see that the generator had headroom.
//
// A Redis target (`redis://HOST:PORT`) gets the same ladder with `XADD s:<prefix>-<i> * d <bytes>`
// (bench/resp_connection.h): one connection per writer, one command in flight per connection, no
// pipelining, the same clock and histogram. Its streams are created with one 1-byte entry each (Redis
// has no empty stream without a consumer group) and removed with DEL.
//
// Errors are counted by kind under "sat.<kind>" ("sat.status_409", "sat.timeout", ...), creation and
// deletion under "sat_create." and "sat_delete."; a failed append keeps its stream's sequence number, so
// the producer retries it (a duplicate answers 204 and counts as ok, under counts "duplicates").
// Runs on the calling thread (one event loop per step).
#pragma once

#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/phase_driver.h"

namespace weir::bench {

struct saturation_config {
  std::string label;          // progress prefix
  std::string stream_prefix;  // stream names are <prefix>-<i>
  unsigned streams = 1000;
  std::vector<unsigned> connections = {64, 256, 1024, 4096};  // the ladder (capped at `streams`)
  std::size_t append_bytes = 256;
  double warmup_secs = 2;
  double secs = 10;
  double plateau = 0.05;            // a step must add more than this share to go on climbing
  unsigned setup_connections = 64;  // creating and deleting the streams
  unsigned request_timeout_ms = 30'000;
  std::vector<int> server_pids;  // for CPU and RSS figures, summed (a cluster's nodes; empty: unknown)
};

saturation_result run_saturation(const target_spec& target, const saturation_config& cfg,
                                 progress_line& progress);

// The ladder as run against `streams` streams: levels above it are replaced by `streams` itself (one
// writer per stream at most), duplicates dropped.
std::vector<unsigned> ladder_for(const std::vector<unsigned>& levels, unsigned streams);
// Whether the ladder goes on after a step of `now` appends/s that followed one of `before`.
bool still_climbing(double before, double now, double plateau);
// The index of the step with the most appends per second (0 when none has a figure).
std::size_t ceiling_of(const std::vector<saturation_level>& levels);

}  // namespace weir::bench

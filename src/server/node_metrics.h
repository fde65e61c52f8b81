// node_metrics: the figures behind GET /metrics (Prometheus text format 0.0.4, base/prometheus_text.h)
// and the feed of the access log. docs/operations.md lists every metric.
//
// Request figures are kept per core, in the core's own counters (base/metrics.h: one writer, relaxed
// loads and stores, no lock and no shared atomic on the request path), written by the HTTP engine's
// exchange_observer call on the connection's core. A scrape adds them up; the state of each core's
// streams (counts, memory, log) is collected by a message to each core (node.cc) and handed to
// render() with the engine's and the subscriptions' figures.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/metrics.h"
#include "cluster/replicator_leadership.h"
#include "http/server.h"
#include "protocol/stream_request.h"
#include "replica/cold_mover.h"
#include "replica/cold_snapshots.h"
#include "storage/log_writer.h"
#include "tier/cold_fetcher.h"

namespace weir::server {

class access_log;

// What a request was, as the node routed it (http::exchange::set_tag). 0 (other): an error the HTTP
// engine answered itself, or a request the node could not place.
enum class request_kind : std::uint8_t {
  other,
  create,
  fork,
  append,
  close,  // an append with Stream-Closed: true
  read,
  head,
  remove,
  long_poll,
  sse,
  preflight,
  healthz,
  metrics,
  subscriptions,  // the reserved `__ds` paths
  count_,
};
inline constexpr std::size_t request_kinds = static_cast<std::size_t>(request_kind::count_);
// The `op` label of a kind ("delete" for remove, "long_poll"...).
std::string_view kind_name(request_kind k);
inline std::uint8_t tag_of(request_kind k) {
  return static_cast<std::uint8_t>(k);
}
// A validated stream request's kind.
request_kind kind_of(const protocol::stream_request& r);
// A request not (yet) understood, by its method: errors then count against the operation it meant.
request_kind kind_of(http::method m);

// One shard's streams (one log's), as its core sees them when asked (node.cc gathers them for a scrape).
struct shard_figures {
  std::uint64_t streams = 0;
  std::uint64_t producers = 0;
  std::uint64_t hot_bytes = 0;
  std::uint64_t hot_budget = 0;
  std::uint64_t hot_evicted = 0;
  std::uint64_t commands_in_flight = 0;
  std::uint64_t bytes_in_flight = 0;
  std::uint64_t cold_reads = 0;          // reads of evicted data done (stream_shard::read_cold)
  std::uint64_t cold_reads_pending = 0;  // in flight on the cold_reader or waiting for it
  metrics::histogram_counts cold_read_us;
  // The cold tier (a shard with a mover: docs/cold-tier.md).
  bool tiered = false;
  replica::cold_mover_stats tier;
  std::uint64_t upload_waiting = 0;        // bytes handed to the uploader, not yet in the bucket
  std::uint64_t upload_failures = 0;       // failed attempts (each retried with the same key and bytes)
  replica::cold_sweeper_stats sweep;       // objects deleted because nothing names them any more
  replica::cold_snapshot_stats snapshots;  // restore snapshots uploaded (replica/cold_snapshots.h)
  std::uint64_t bucket_reads = 0;
  std::uint64_t bucket_read_failures = 0;
  bool durable = false;
  storage::log_stats log;
};

// The process as the kernel sees it (/proc/self), under the names Prometheus client libraries use.
struct process_figures {
  bool known = false;  // false: /proc could not be read (not rendered)
  double cpu_seconds = 0;
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;
  double start_time_seconds = 0;  // since the Unix epoch
};
process_figures read_process_figures();

// Node-wide figures that are not per core.
struct node_figures {
  process_figures process;
  std::vector<shard_figures> shards;
  http::server_stats http;
  std::uint64_t slow_turns = 0;           // event-loop turns of 250 ms or more, every core's
  std::int64_t longest_turn_ms = 0;       // the longest turn of any core
  metrics::histogram_counts loop_lag_us;  // every core's io::event_loop::lag_us, added up
  bool cluster = false;                   // a cluster node: `leadership` means something
  cluster::leadership_counts leadership;
  bool subscriptions = false;  // the service exists: the next three mean something
  std::uint64_t subscription_count = 0;
  std::uint64_t deliveries_ok = 0;
  std::uint64_t deliveries_failed = 0;
  // The cold tier's bucket client and block cache (`cold`: the node has a tier; the rest means something).
  bool cold = false;
  metrics::histogram_counts put_us, get_us;  // each S3 PUT and GET attempt
  std::uint64_t store_requests = 0;
  std::uint64_t store_failures = 0;
  tier::cold_fetcher_stats fetch;
};

class node_metrics final : public http::exchange_observer {
 public:
  // `count`: keep the request figures (setting metrics). The access log is attached later, if any.
  explicit node_metrics(bool count);
  ~node_metrics() override;

  // Start-up, before any core runs.
  void set_cores(unsigned cores);
  void set_access_log(access_log* log);
  bool counting() const { return count_; }

  // HTTP engine, on the connection's core.
  void finished(unsigned core, const http::exchange_record& r) override;
  // A long-poll or SSE request was handed to its stream's core (on the connection's core; it ends in
  // finished()).
  void live_started(unsigned core, request_kind k);

  // The whole exposition, from any thread (request figures are read as they are at that moment).
  std::string render(const node_figures& f) const;

 private:
  // Status slots: 0 for "no response", then 100..599.
  static constexpr std::size_t status_slots = 501;
  struct per_core {
    per_core();
    std::array<std::array<metrics::counter, status_slots>, request_kinds> requests;
    std::array<metrics::counter, request_kinds> bytes_in, bytes_out;
    std::deque<metrics::histogram> latency;  // per kind, microseconds to the response head (deque: no move)
    std::array<metrics::counter, 2> live_started, live_ended;  // long-poll, SSE
  };

  bool count_;
  access_log* log_;
  std::vector<std::unique_ptr<per_core>> cores_;
};

}  // namespace weir::server

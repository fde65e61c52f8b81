// node: one running `weir serve`. Owns the HTTP engine (one event loop per core), one stream_shard per
// log (as many as the cores the data directory was created with; shard i runs on core i modulo the
// cores), and (when built with it) the subscription service on core 0.
//
// Which core runs what:
//   - the connection's core (any): checks the request's token (auth::authorizer), parses and validates
//     it (protocol::parse_stream_request, JSON validation), answers /healthz and CORS preflights, and
//     sends every response;
//   - the core of a stream's owner shard (FNV-1a hash of its path % shards): every command and read on it,
//   its
//     live readers and its TTL expiry; a fork's source may be owned by another core (fork_retain and
//     fork_release travel there as messages);
//   - core 0: the subscription service (`__ds` paths) and the stream events reported to it.
// A cluster node has one shard per lane (cluster_options::lanes; docs/replication.md, "Lanes"): a
// stream's owner is the shard of its raft group's lane, lane l on core l modulo the cores.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "http/exchange.h"
#include "protocol/cors.h"
#include "replica/placement.h"
#include "replica/wal_recovery.h"
#include "server/serve_config.h"
#include "storage/segment_reader.h"
#include "streams/state_machine.h"

namespace weir::http {
class server;
}
namespace weir::storage {
class dir_lock;
}
namespace weir::auth {
class authorizer;
}
namespace weir::io {
class tls_context;
}

namespace weir::server {

class stream_shard;
}  // namespace weir::server
namespace weir::tier {
class cold_reader;
class object_store;
class object_store_workers;
class cold_fetcher;
struct s3_store_metrics;
}  // namespace weir::tier
namespace weir::server {
class replication;
struct subscriptions_glue;
class node_metrics;
class access_log;

class node {
 public:
  // `storage_env`: where the durable store lives (default: the real file system; tests pass a mem_env).
  explicit node(serve_config cfg, storage::env* storage_env = nullptr);
  ~node();
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  // Binds the listeners and creates the data directory. After it, port() is the bound port.
  status start();
  // Runs every core until stop() (or SIGTERM/SIGINT when `handle_signals`; the caller must have
  // blocked them before any thread started), then drains. Blocks.
  void run(bool handle_signals);
  // Thread-safe: begin a graceful stop.
  void stop();
  // Thread-safe: the node cannot go on (a cluster node's raft log failed on disk): logs `why`, stops
  // as stop() does, and exit_code() becomes 1 so that a supervisor restarts it (recovery then starts
  // from what is on disk).
  void fail(const std::string& why);
  int exit_code() const { return exit_code_.load(); }
  // Thread-safe: re-read what can change without a restart (SIGHUP): the JWKS file and the TLS
  // certificate and key. A file that cannot be read leaves the previous keys in force (logged).
  void reload();
  std::uint16_t port() const;

  unsigned shard_count() const { return static_cast<unsigned>(shards_.size()); }
  // Streams held by every shard together (soft-deleted ones too); any thread.
  std::size_t stream_count() const;
  stream_shard& shard(unsigned i) { return *shards_[i]; }
  stream_shard& owner_of(std::string_view path);
  // A cluster node: the shard of the lane that runs raft group `group` (shard g % lanes).
  stream_shard& shard_of_group(std::uint32_t group) { return *shards_[group % shards_.size()]; }
  const serve_config& config() const { return cfg_; }
  // What start() recovered from the data directory.
  const replica::wal_recovery_stats& recovery() const { return recovery_; }

  // Stream events for the subscription service (called on the owner core; delivered on core 0).
  void report_created(const streams::stream_meta& m);
  void report_appended(const streams::stream_meta& m);
  void report_deleted(const std::string& path);

 private:
  void reload_tls();
  std::string tls_key_file() const;  // tls-key, or tls-cert when the key is in the same file
  void on_request(const http::request& req, http::exchange ex);
  // The replication of a cluster node, for the /cluster routes; on a single node, answers the request
  // (404: the server's own path, not a stream) and returns null.
  replication* cluster_route(http::exchange& ex, const protocol::cors_grant& cors);
  // /cluster/members (docs/operations.md, "Cluster"): the desired membership, and its changes.
  void route_members(const http::request& req, http::exchange ex, const protocol::cors_grant& cors);
  void route_reserved(const http::request& req, std::string_view root, std::string_view rest,
                      http::exchange ex);
  // One stream_shard per log, shard i on core i modulo the cores (replaces any shards made before).
  void make_shards(unsigned count);
  // A cluster node: every lane's replication, lane 0 first.
  std::vector<replication*> lanes();
  // Opens the data log, the node log and the replication of every lane (start()).
  status open_cluster();
  // The cold tier of a single node (node_cold.cc): the bucket checked (and with restore, the data
  // directory rebuilt from it) before the logs are opened; then each shard's mover and restore snapshots
  // attached.
  status connect_cold();
  status restore_from_bucket();
  status open_cold();
  // GET /healthz of a node with a cold tier: 200 with what the tier waits for and why, gathered from every
  // shard's loop.
  void cold_health(http::exchange ex);
  // GET /cluster and /healthz of a cluster node: `fn(lane)` runs on every lane's loop, then `done` on
  // lane 0's (after every fn ran).
  void gather_lanes(std::function<void(replication&)> fn, std::function<void()> done);
  // `fn(shard)` on every shard's loop in turn, then `done` on shard 0's.
  void gather_shards(std::function<void(stream_shard&)> fn, std::function<void()> done);
  // GET /metrics (node_scrape.cc): gathers every core's figures by message, answers on ex's core.
  void serve_metrics(http::exchange ex);
  // The access log's once-a-second flush on `core` (re-armed until stop()).
  void arm_access_log_flush(unsigned core);

  serve_config cfg_;
  protocol::cors_policy cors_;  // cors-allowed-origins, read-only once built
  storage::env* env_;
  std::unique_ptr<storage::dir_lock> dir_lock_;  // held from start() until the node is destroyed
  system_clock_source clock_;
  // Before http_: the engine reports to them until its last connection is closed.
  std::unique_ptr<access_log> access_log_;
  std::unique_ptr<node_metrics> metrics_;    // null: neither metrics nor access log
  std::vector<std::uint64_t> flush_timers_;  // per core, used on that core only
  std::unique_ptr<http::server> http_;
  std::vector<std::unique_ptr<storage::segment_reader>> segments_;  // before shards_: outlives them
  std::vector<std::unique_ptr<stream_shard>> shards_;
  // After shards_ and segments_: its threads stop (and drop the reads not yet done) before either goes.
  std::unique_ptr<tier::cold_reader> cold_reads_;  // null without segment files (nothing is ever cold)
  // The cold tier (null without --cold): the S3 client, its retries, and the threads that run them; the
  // workers go first (their completions post to the shards' loops).
  std::unique_ptr<tier::object_store> cold_s3_;
  std::unique_ptr<tier::object_store> cold_store_;
  std::unique_ptr<tier::cold_fetcher> cold_fetcher_;
  std::unique_ptr<tier::object_store_workers> cold_workers_;
  std::string cold_described_;                               // the bucket, as logs name it (never the secret)
  const tier::s3_store_metrics* cold_s3_metrics_ = nullptr;  // cold_s3_'s request counts and latencies
  std::unique_ptr<subscriptions_glue> subs_;
  std::unique_ptr<auth::authorizer> auth_;  // null: access control off; set by start()
  std::shared_ptr<io::tls_context> tls_;    // null: plain HTTP; the certificate is loaded by start()
  std::atomic<std::uint64_t> next_live_id_{1};
  std::atomic<bool> stopping_{false};
  std::atomic<int> exit_code_{0};
  replica::wal_recovery_stats recovery_;
};

using replica::owner_index;

}  // namespace weir::server

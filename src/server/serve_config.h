// serve_config: everything a node is configured with (node.h takes it). Where each value comes from
// (defaults, the TOML file, flags) and how it is checked is the settings table of `weir serve`
// (app/settings.h); this header holds only the values, so the HTTP front does not depend on the app.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "auth/api_key.h"
#include "cluster/cluster_options.h"

namespace weir::server {

struct serve_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 4437;  // PROTOCOL.md 13.1
  std::string data_dir = "./weir-data";
  unsigned threads = 0;  // 0: one per CPU, at most 4
  std::int64_t long_poll_timeout_ms = 30'000;
  std::uint64_t body_limit = 64ull << 20;
  std::string log_level = "info";
  std::string log_format = "text";  // "text" or "json"
  bool metrics = true;              // GET /metrics and the per-core request figures behind it
  // The access log: a file path, "-" for standard error, "": none.
  std::string access_log;
  std::size_t read_chunk_bytes = 64 * 1024;  // server chunk limit for catch-up reads (5.6)
  std::int64_t sse_close_after_ms = 60'000;  // 5.8 connection lifecycle
  std::int64_t sse_keep_alive_ms = 15'000;
  std::size_t max_path_length = 1024;
  // The write-ahead log: "always" (acknowledge after fdatasync), "interval:MS" or "never".
  std::string fsync = "always";
  bool durable = true;           // false: memory only, no log (tests)
  bool prepare_segments = true;  // storage::log_options::prepare_segments (fsync always)
  // Stream data kept in memory, all cores together; older data is read from the log's segment files.
  std::uint64_t hot_bytes = 256ull << 20;
  // A log segment file is rolled once it reaches this size.
  std::uint64_t segment_bytes = 128ull << 20;
  // Log growth (per core) after which the core's state is checkpointed; 0: never.
  std::uint64_t checkpoint_bytes = 256ull << 20;
  // Bytes of writes per core waiting for the disk before further writes get 503 + Retry-After.
  std::uint64_t max_in_flight_bytes = 256ull << 20;
  // fsync always: how long a batch may wait for the writers the previous one answered (microseconds).
  std::uint64_t group_commit_gather_us = 0;
  // How long the path of a deleted stream cannot be re-created (0: at once, as the conformance suite
  // expects; PROTOCOL.md 1 says a new stream SHOULD NOT reuse a deleted stream's URL).
  std::uint64_t deleted_path_hold_ms = 0;
  // Streams the node holds (soft-deleted ones included) before a create answers 403; 0: no quota.
  std::uint64_t max_streams = 1'000'000;
  // scheme://host[:port] by which clients reach the node, for the URLs it hands out (Location,
  // callback_url, jwks_url); "": from each request's Host header (when it is a plain host[:port]).
  std::string public_url;
  // Comma-separated origins whose pages may send credentials (CORS); "": every origin gets "*".
  std::string cors_allowed_origins;
  // Subscriptions (docs/subscriptions.md). Webhooks over plain HTTP to loopback (tests, development).
  bool allow_loopback_webhooks = false;
  // Comma-separated host names admitted as webhook targets (https) even when they resolve to private
  // addresses.
  std::string webhook_allow_hosts;
  // Failed webhook deliveries in a row before a subscription is paused; 0: retry forever.
  std::uint64_t max_webhook_retries = 30;
  std::uint64_t max_subscriptions = 1'000;  // 0: unlimited
  std::uint64_t max_subscription_pattern_bytes = 256;
  // Open connections, all cores together; 0: the descriptor limit less descriptor_reserve.
  std::uint64_t max_connections = 0;
  // Open connections from one client address; 0: no such cap.
  std::uint64_t max_connections_per_client = 0;
  // Descriptors kept for files (log segments, checkpoints) that connections may never take.
  std::uint64_t descriptor_reserve = 256;
  // Request bodies being received, all cores together; beyond it a request whose body has not arrived
  // with its head gets 503 + Retry-After before it is read. 0: no budget.
  std::uint64_t body_budget_bytes = 256ull << 20;
  // Bytes the connections of one core read per event-loop turn (http::server_options); 0: no bound.
  std::uint64_t read_bytes_per_turn = 2ull << 20;
  // Output queued for one streamed response (an SSE subscriber) whose client does not read; beyond it
  // the connection is closed.
  std::uint64_t max_stream_queue_bytes = 1ull << 20;
  // Access control (docs/security.md, src/auth). Off when no API key and no jwks_file are configured,
  // which a node allows only on a loopback address unless insecure_no_auth.
  bool insecure_no_auth = false;
  std::string jwks_file;     // the public keys JWTs are signed with (JWKS); "": no JWTs
  std::string jwt_issuer;    // the "iss" a JWT must carry
  std::string jwt_audience;  // a value a JWT's "aud" must hold
  std::uint64_t jwt_leeway_s = 30;
  std::uint64_t query_token_max_ttl_s = 600;  // 0: no tokens in the query (access_token)
  // HTTPS on the listen address (io/tls.h): PEM files, re-read on SIGHUP. tls_key "": in tls_cert.
  std::string tls_cert;
  std::string tls_key;
  bool tls_ktls = false;  // SSL_OP_ENABLE_KTLS
  bool http2 = true;      // h2c with prior knowledge, h2 through ALPN (docs/http2.md)
  // HTTP/2 limits per connection (http::h2_options, same defaults).
  std::uint32_t http2_max_streams = 256;
  std::uint32_t http2_max_header_list_bytes = 32 * 1024;
  std::uint32_t http2_stream_window_bytes = 1u << 20;
  std::uint32_t http2_connection_window_bytes = 16u << 20;
  std::size_t http2_connection_queue_bytes = 32u << 20;
  // The cold tier (docs/cold-tier.md): sealed stream data goes to an S3 bucket in the background. cold
  // "": none. The credentials come from these (settings file only) or else AWS_ACCESS_KEY_ID,
  // AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; the secret and the token are never printed.
  std::string cold;  // s3://BUCKET[/PREFIX]
  std::string s3_region = "us-east-1";
  std::string s3_endpoint;  // http[s]://HOST[:PORT] of an S3-compatible server; "": AWS
  std::string s3_access_key_id;
  std::string s3_secret_access_key;
  std::string s3_session_token;
  // The most stream data a node keeps on its own disk that is not yet in the bucket; 0: no budget.
  std::uint64_t local_bytes = 0;
  // Stream bytes the node keeps on its disk before it drops those already in the bucket (a local read
  // cache of them); 0: three quarters of local_bytes (and with no local_bytes, nothing is dropped).
  std::uint64_t cold_keep_bytes = 0;
  std::uint64_t cold_object_bytes = 8ull << 20;  // an object is cut at about this size
  std::uint64_t cold_max_age_ms = 30'000;        // or once its oldest bytes waited this long
  // An object nothing names any more (a deleted stream's, an orphan) is deleted once it stayed so this
  // long (docs/cold-tier.md, "Orphans").
  std::uint64_t cold_gc_grace_ms = 600'000;
  // Each shard uploads a restore snapshot this often while its log grows (docs/cold-tier.md, "Restore").
  std::uint64_t cold_snapshot_interval_ms = 10'000;
  // Rebuild an empty data directory from the bucket before starting.
  bool restore = false;
  // Cluster mode (docs/operations.md, "Cluster"): node-id, peer-listen, peers, raft-groups. Without a
  // node id (the default) the node runs alone.
  cluster::cluster_options cluster;
  // The [[auth.api-keys]] tables of the config file (no flag: a list of structured entries).
  std::vector<auth::api_key> api_keys;
};

}  // namespace weir::server

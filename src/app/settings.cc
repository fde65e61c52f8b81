#include "app/settings.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <toml++/toml.h>

#include <array>
#include <charconv>
#include <limits>
#include <sstream>
#include <type_traits>

#include "protocol/cors.h"
#include "protocol/header_values.h"
#include "storage/log_writer.h"
#include "tier/cold_location.h"

namespace weir::app {

void apply_listen(serve_config& c, const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    throw config_error("listen: expected HOST:PORT, got '" + listen + "'");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto digits = std::string_view(listen).substr(colon + 1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || p != digits.data() + digits.size() || port > 65535) {
    throw config_error("listen: invalid port in '" + listen + "'");
  }
  c.host = host;
  c.port = static_cast<std::uint16_t>(port);
}

namespace {

constexpr std::uint64_t kib = 1024;

// The member that a path of member pointers leads to: `at<&serve_config::x>(c)` is c.x,
// `at<&serve_config::cluster, &cluster::cluster_options::groups>(c)` is c.cluster.groups.
template <auto Member, auto... Rest, class C>
constexpr auto& at(C& c) {
  if constexpr (sizeof...(Rest) == 0) {
    return c.*Member;
  } else {
    return at<Rest...>(c.*Member);
  }
}

// The accessors of one serve_config member (or a member of one of its members), by its type: bool,
// std::string or a non-negative integer.
template <auto... Path>
constexpr setting_access field() {
  using T = std::remove_cvref_t<decltype(at<Path...>(std::declval<serve_config&>()))>;
  if constexpr (std::is_same_v<T, bool>) {
    return {setting_kind::boolean, 1, [](const serve_config& c) -> setting_value { return at<Path...>(c); },
            [](serve_config& c, const setting_value& v) { at<Path...>(c) = std::get<bool>(v); }};
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {setting_kind::text, 0, [](const serve_config& c) -> setting_value { return at<Path...>(c); },
            [](serve_config& c, const setting_value& v) { at<Path...>(c) = std::get<std::string>(v); }};
  } else {
    static_assert(std::is_integral_v<T>, "a setting is a bool, a string or an integer");
    return {setting_kind::integer, static_cast<std::uint64_t>(std::numeric_limits<T>::max()),
            // A negative value (set in code, not by a user) reads as huge and fails the range check.
            [](const serve_config& c) -> setting_value { return static_cast<std::uint64_t>(at<Path...>(c)); },
            [](serve_config& c, const setting_value& v) {
              at<Path...>(c) = static_cast<T>(std::get<std::uint64_t>(v));
            }};
  }
}

std::string listen_text(const serve_config& c) {
  bool v6 = c.host.find(':') != std::string::npos;
  return (v6 ? "[" + c.host + "]" : c.host) + ":" + std::to_string(c.port);
}

constexpr setting_access listen_access{
    setting_kind::text, 0, [](const serve_config& c) -> setting_value { return listen_text(c); },
    [](serve_config& c, const setting_value& v) { apply_listen(c, std::get<std::string>(v)); }};

// peer-listen and peers are text in flags and TOML and parsed values in serve_config (cluster_options.h);
// a malformed value is an error at once, like listen's.
constexpr setting_access peer_listen_access{setting_kind::text, 0,
                                            [](const serve_config& c) -> setting_value {
                                              return cluster::format_peer_address(c.cluster.peer_listen);
                                            },
                                            [](serve_config& c, const setting_value& v) {
                                              auto a = cluster::parse_peer_address(std::get<std::string>(v));
                                              if (!a) throw config_error("peer-listen: " + a.err().reason);
                                              c.cluster.peer_listen = std::move(*a);
                                            }};

constexpr setting_access peers_access{
    setting_kind::text, 0,
    [](const serve_config& c) -> setting_value { return cluster::format_peers(c.cluster.peers); },
    [](serve_config& c, const setting_value& v) {
      auto p = cluster::parse_peers(std::get<std::string>(v));
      if (!p) throw config_error("peers: " + p.err().reason);
      c.cluster.peers = std::move(*p);
    }};

std::string check_peer_listen(const serve_config& c) {
  const cluster::peer_address& a = c.cluster.peer_listen;
  if (a.host == c.host && a.port == c.port && a.port != 0) return "must differ from listen (HTTP)";
  return "";
}

// io::listen_tcp binds IPv4 only (io/socket.cc); say so before the node starts rather than after recovery.
std::string check_listen(const serve_config& c) {
  in_addr a{};
  if (c.host == "localhost" || ::inet_pton(AF_INET, c.host.c_str(), &a) == 1) return "";
  return "an IPv4 address or localhost (IPv6 and other names are not supported yet), got '" + c.host + "'";
}
std::string check_data_dir(const serve_config& c) {
  return c.data_dir.empty() ? "must not be empty" : "";
}
std::string check_log_level(const serve_config& c) {
  for (std::string_view l : {"trace", "debug", "info", "warn", "error", "off"}) {
    if (c.log_level == l) return "";
  }
  return "one of trace, debug, info, warn, error, off; got '" + c.log_level + "'";
}
std::string check_log_format(const serve_config& c) {
  if (c.log_format == "text" || c.log_format == "json") return "";
  return "text or json; got '" + c.log_format + "'";
}
std::string check_fsync(const serve_config& c) {
  if (storage::parse_sync_policy(c.fsync)) return "";
  return "always, interval:MS or never; got '" + c.fsync + "'";
}
std::string check_checkpoint_bytes(const serve_config& c) {
  if (c.checkpoint_bytes == 0 || c.checkpoint_bytes >= 64 * kib) return "";
  return "0 (never) or at least 65536, got " + std::to_string(c.checkpoint_bytes);
}
std::string check_max_in_flight_bytes(const serve_config& c) {
  if (c.max_in_flight_bytes >= c.body_limit) return "";
  return "at least body-limit (" + std::to_string(c.body_limit) + ") so that one request fits, got " +
         std::to_string(c.max_in_flight_bytes);
}

std::string check_body_budget_bytes(const serve_config& c) {
  if (c.body_budget_bytes == 0 || c.body_budget_bytes >= c.body_limit) return "";
  return "0 (no budget) or at least body-limit (" + std::to_string(c.body_limit) +
         ") so that one request fits, got " + std::to_string(c.body_budget_bytes);
}

std::string check_webhook_allow_hosts(const serve_config& c) {
  std::string_view rest = c.webhook_allow_hosts;
  while (!rest.empty()) {
    std::string_view name = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), name.size() + 1));
    bool ok = !name.empty();
    for (char ch : name) {
      bool name_char =
          (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_';
      ok = ok && name_char;
    }
    if (!ok) return "lower-case host names separated by commas, got '" + c.webhook_allow_hosts + "'";
  }
  return "";
}

std::string check_public_url(const serve_config& c) {
  if (c.public_url.empty() || protocol::valid_origin(c.public_url)) return "";
  return "http://HOST[:PORT] or https://HOST[:PORT] without a path, got '" + c.public_url + "'";
}

// The cold tier's settings make sense only together: a location, and where it is.
std::string check_cold(const serve_config& c) {
  if (c.cold.empty()) return "";
  if (auto l = tier::parse_cold_location(c.cold); !l) return l.err().reason;
  return "";
}
std::string check_s3_endpoint(const serve_config& c) {
  if (c.s3_endpoint.empty()) return "";
  if (auto e = tier::parse_s3_endpoint(c.s3_endpoint); !e) return e.err().reason;
  return "";
}
std::string check_s3_region(const serve_config& c) {
  bool ok = !c.s3_region.empty() && c.s3_region.size() <= 64;
  for (char ch : c.s3_region) ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-');
  return ok ? "" : "a region name such as us-east-1, got '" + c.s3_region + "'";
}
std::string check_local_bytes(const serve_config& c) {
  if (c.local_bytes == 0) return "";
  if (c.cold.empty()) return "needs cold (without a bucket every byte stays on the node's disk)";
  // Appends stop at the budget; it must hold what the tier waits for before it uploads: two objects
  // being filled and sent, and a segment being written.
  const std::uint64_t smallest = 2 * c.cold_object_bytes + c.segment_bytes;
  if (c.local_bytes >= smallest) return "";
  return "at least " + std::to_string(smallest) +
         " (two cold-object-bytes and a segment-bytes) so that uploads can keep up, got " +
         std::to_string(c.local_bytes);
}

std::string check_cold_keep_bytes(const serve_config& c) {
  if (c.cold_keep_bytes == 0) return "";
  if (c.cold.empty()) return "needs cold";
  if (c.local_bytes > 0 && c.cold_keep_bytes > c.local_bytes) {
    return "at most local-bytes (" + std::to_string(c.local_bytes) + "), got " +
           std::to_string(c.cold_keep_bytes);
  }
  return "";
}

// THE table: one row per setting. Names are the flags and the TOML keys; the order is --help's.
const std::array table{
    setting{"listen", "HOST:PORT",
            "Address to listen on: an IPv4 address (or localhost) and a port; 0.0.0.0 for every interface; "
            "port 0 picks a free port (logged at start)",
            listen_access, 0, UINT64_MAX, check_listen},
    setting{"data-dir", "DIR", "Data directory (the write-ahead log, checkpoints, subscriptions)",
            field<&serve_config::data_dir>(), 0, UINT64_MAX, check_data_dir},
    setting{"threads", "N",
            "Event loops, one per core; 0: one per CPU, at most 4. A new data directory gets as many logs "
            "(stream shards), for good: a restart with another count runs them on its cores (several on one "
            "core, or cores that own none)",
            field<&serve_config::threads>(), 0, 256},
    setting{"fsync", "POLICY",
            "When appends are acknowledged: always (after fdatasync), interval:MS (fdatasync every MS, "
            "acknowledge at once) or never (the OS writes back)",
            field<&serve_config::fsync>(), 0, UINT64_MAX, check_fsync},
    setting{
        "durable", "true|false",
        "false: keep streams in memory only, without the write-ahead log (all is lost on exit; for tests)",
        field<&serve_config::durable>()},
    setting{"prepare-segments", "true|false",
            "With fsync always: prepare each next log segment ahead of time as a file of zeros, so that an "
            "fdatasync has no file-system metadata to commit (faster syncs; the disk writes each byte twice)",
            field<&serve_config::prepare_segments>()},
    setting{"long-poll-timeout-ms", "MS", "How long a long-poll read waits for data before 204",
            field<&serve_config::long_poll_timeout_ms>(), 1, 3'600'000},
    setting{"body-limit", "BYTES", "Largest request body", field<&serve_config::body_limit>(), 1,
            (1ull << 32) - 1},
    setting{"read-chunk-bytes", "BYTES", "Most bytes one catch-up read returns (the client reads on)",
            field<&serve_config::read_chunk_bytes>(), 1},
    setting{"sse-keep-alive-ms", "MS", "Interval of SSE keep-alive comments on an idle connection",
            field<&serve_config::sse_keep_alive_ms>(), 1},
    setting{"sse-close-after-ms", "MS", "An SSE connection is closed after this long (the client reconnects)",
            field<&serve_config::sse_close_after_ms>(), 1},
    setting{"max-path-length", "BYTES", "Longest stream path", field<&serve_config::max_path_length>(), 2},
    setting{"hot-bytes", "BYTES",
            "Stream data kept in memory, all cores together; older data is read from the log's segment files",
            field<&serve_config::hot_bytes>(), 64 * kib},
    setting{"segment-bytes", "BYTES", "Size at which a log segment file is rolled",
            field<&serve_config::segment_bytes>(), 64 * kib},
    setting{"checkpoint-bytes", "BYTES",
            "Log growth per core between checkpoints (older segments are then reclaimed); 0: never",
            field<&serve_config::checkpoint_bytes>(), 0, UINT64_MAX, check_checkpoint_bytes},
    setting{"max-in-flight-bytes", "BYTES",
            "Writes per core waiting for the disk before further writes get 503 + Retry-After",
            field<&serve_config::max_in_flight_bytes>(), 0, UINT64_MAX, check_max_in_flight_bytes},
    setting{"deleted-path-hold-ms", "MS",
            "How long the path of a deleted stream cannot be re-created (409); 0: at once. Set it when "
            "caches or CDNs key responses by URL and offset, which would otherwise mix the old stream's "
            "bytes with the new one's",
            field<&serve_config::deleted_path_hold_ms>(), 0, 365ull * 24 * 3600 * 1000},
    setting{"group-commit-gather-us", "US",
            "With fsync always: how long the next batch may wait for the writers the last one answered, so "
            "that they share one fdatasync (never longer than the last batch took); 0: sync at once "
            "(experimental)",
            field<&serve_config::group_commit_gather_us>(), 0, 100'000},
    setting{"max-streams", "N",
            "Streams the node holds before a create of a new one answers 403 (a quota against clients that "
            "create without end); 0: no quota",
            field<&serve_config::max_streams>()},
    setting{"max-connections", "N",
            "Open connections, all cores together; 0: the descriptor limit (raised to its hard limit at "
            "start) less descriptor-reserve. At the cap the longest-idle connection is closed for a new one, "
            "or the new one gets 503",
            field<&serve_config::max_connections>()},
    setting{"max-connections-per-client", "N",
            "Open connections from one client address (beyond it: 429); 0: no cap. Behind a proxy every "
            "client has the proxy's address",
            field<&serve_config::max_connections_per_client>()},
    setting{"descriptor-reserve", "N",
            "File descriptors that connections may never take, kept for the log's files",
            field<&serve_config::descriptor_reserve>(), 16, 1'000'000},
    setting{"body-budget-bytes", "BYTES",
            "Request bodies being received, all cores together; beyond it a request whose body did not "
            "arrive with its head gets 503 + Retry-After (decided from Content-Length; chunked bodies count "
            "as they grow); 0: no budget",
            field<&serve_config::body_budget_bytes>(), 0, UINT64_MAX, check_body_budget_bytes},
    setting{"read-bytes-per-turn", "BYTES",
            "Bytes the connections of one core read in one turn of its event loop, all together; the rest "
            "waits for the next turns, after the timers (a cluster node's raft heartbeats share the loop). "
            "0: no bound",
            field<&serve_config::read_bytes_per_turn>()},
    setting{"max-stream-queue-bytes", "BYTES",
            "Output queued for one SSE subscriber that does not read; beyond it its connection is closed "
            "(SSE sessions send a 32 KiB window at a time and stay well under it)",
            field<&serve_config::max_stream_queue_bytes>(), 256 * kib},
    setting{"allow-loopback-webhooks", "true|false",
            "Let webhook subscriptions POST over plain HTTP to localhost / 127.0.0.x (tests and development "
            "only; logged as a warning at start). Off: only https to public addresses",
            field<&serve_config::allow_loopback_webhooks>()},
    setting{"webhook-allow-hosts", "HOST,HOST",
            "Host names admitted as webhook targets over https even when they resolve to private addresses "
            "(never link-local or cloud metadata)",
            field<&serve_config::webhook_allow_hosts>(), 0, UINT64_MAX, check_webhook_allow_hosts},
    setting{"max-webhook-retries", "N",
            "Failed webhook deliveries in a row after which a subscription is paused (status failed) until "
            "it is re-confirmed with PUT; 0: retry forever",
            field<&serve_config::max_webhook_retries>(), 0, 1'000'000},
    setting{"max-subscriptions", "N", "Subscriptions the node keeps (beyond it: 403); 0: no cap",
            field<&serve_config::max_subscriptions>()},
    setting{"max-subscription-pattern-bytes", "BYTES", "Longest subscription pattern (beyond it: 400)",
            field<&serve_config::max_subscription_pattern_bytes>(), 1, 65'536},
    setting{"public-url", "URL",
            "http(s)://HOST[:PORT] by which clients reach the node, for the URLs it hands out (Location, "
            "callback_url, jwks_url); empty: from each request's Host header",
            field<&serve_config::public_url>(), 0, UINT64_MAX, check_public_url},
    setting{"cors-allowed-origins", "ORIGIN,ORIGIN",
            "Origins (http(s)://HOST[:PORT]) whose pages may make credentialed requests: echoed in "
            "Access-Control-Allow-Origin with Access-Control-Allow-Credentials: true and Vary: Origin; "
            "empty: every origin gets * without credentials (docs/browser.md)",
            field<&serve_config::cors_allowed_origins>(), 0, UINT64_MAX,
            [](const serve_config& c) { return protocol::check_cors_origins(c.cors_allowed_origins); }},
    setting{"log-level", "LEVEL", "trace, debug, info, warn, error or off", field<&serve_config::log_level>(),
            0, UINT64_MAX, check_log_level},
    setting{"log-format", "FORMAT",
            "text (for people) or json (one object a line: ts, level, thread, msg; for log collectors)",
            field<&serve_config::log_format>(), 0, UINT64_MAX, check_log_format},
    setting{"metrics", "true|false",
            "GET /metrics in the Prometheus text format (docs/operations.md); false: no request figures are "
            "kept and /metrics answers 404",
            field<&serve_config::metrics>()},
    setting{"access-log", "FILE",
            "One line per request (time, client, method, path without its query, status, bytes, duration) to "
            "FILE, or - for standard error; JSON lines with log-format json; empty: none",
            field<&serve_config::access_log>()},
    // Access control (docs/security.md); API keys are [[auth.api-keys]] tables of the config file.
    setting{"insecure-no-auth", "true|false",
            "Serve every client without a token on a non-loopback address (without it such a node refuses to "
            "start unless API keys or --jwks-file are configured)",
            field<&serve_config::insecure_no_auth>()},
    setting{"jwks-file", "FILE",
            "JWKS file of the public keys (Ed25519, P-256, RSA) that sign accepted JWTs; re-read on SIGHUP. "
            "Needs jwt-issuer and jwt-audience",
            field<&serve_config::jwks_file>()},
    setting{"jwt-issuer", "TEXT", "The \"iss\" an accepted JWT must carry",
            field<&serve_config::jwt_issuer>()},
    setting{"jwt-audience", "TEXT", "A value the \"aud\" of an accepted JWT must hold",
            field<&serve_config::jwt_audience>()},
    setting{"jwt-leeway-s", "SECONDS", "Clock skew allowed when checking a JWT's exp and nbf",
            field<&serve_config::jwt_leeway_s>(), 0, 300},
    setting{"query-token-max-ttl-s", "SECONDS",
            "A token in a GET's access_token parameter (for EventSource) must be a JWT that expires within "
            "this many seconds; 0: no tokens in URLs",
            field<&serve_config::query_token_max_ttl_s>(), 0, 86'400},
    // TLS (docs/http-engine.md, "TLS"): with a certificate the listen address speaks HTTPS only.
    setting{"tls-cert", "FILE",
            "PEM certificate chain (leaf first) to serve HTTPS on the listen address (then HTTPS only; TLS "
            "1.2 and 1.3, ALPN h2 and http/1.1); re-read on SIGHUP for new connections. An expired "
            "certificate is "
            "a start-up error",
            field<&serve_config::tls_cert>()},
    setting{"tls-key", "FILE", "PEM private key of tls-cert; empty: the tls-cert file holds the key too",
            field<&serve_config::tls_key>()},
    setting{
        "tls-ktls", "true|false",
        "Hand the TLS record layer to the kernel (Linux tls module) after each handshake where the kernel "
        "offers it; user space otherwise",
        field<&serve_config::tls_ktls>()},
    setting{"http2", "true|false",
            "HTTP/2 beside HTTP/1.1 on the listen address: with prior knowledge (h2c) on plain TCP, through "
            "ALPN (h2) with tls-cert. Off: HTTP/1.1 only",
            field<&serve_config::http2>()},
    setting{"http2-max-streams", "N",
            "HTTP/2 requests (live tails included) one connection may have open at once "
            "(SETTINGS_MAX_CONCURRENT_STREAMS); more are refused",
            field<&serve_config::http2_max_streams>(), 1, 100'000},
    setting{"http2-max-header-list-bytes", "BYTES",
            "Largest HTTP/2 request header list (names + values + 32 per field); larger ones get 431",
            field<&serve_config::http2_max_header_list_bytes>(), kib, 1024 * kib},
    setting{"http2-stream-window-bytes", "BYTES",
            "Request body bytes an HTTP/2 client may send on one stream ahead of the node (flow control)",
            field<&serve_config::http2_stream_window_bytes>(), 65'535, 2'147'483'647},
    setting{"http2-connection-window-bytes", "BYTES",
            "Request body bytes an HTTP/2 client may send on all its streams together ahead of the node",
            field<&serve_config::http2_connection_window_bytes>(), 65'535, 2'147'483'647},
    setting{"http2-connection-queue-bytes", "BYTES",
            "Response bytes all streams of one HTTP/2 connection may hold queued for a peer that does not "
            "read them; beyond it the streams holding most are reset. 0: no bound",
            field<&serve_config::http2_connection_queue_bytes>()},
    // The cold tier (docs/cold-tier.md).
    setting{"cold", "s3://BUCKET[/PREFIX]",
            "Move stream data to this S3 bucket (AWS, or any S3-compatible server with s3-endpoint) in the "
            "background, so that the node's disk holds a bounded working set; empty: every byte stays on "
            "local disk",
            field<&serve_config::cold>(), 0, UINT64_MAX, check_cold},
    setting{"s3-region", "REGION", "The bucket's region (signed into every request)",
            field<&serve_config::s3_region>(), 0, UINT64_MAX, check_s3_region},
    setting{"s3-endpoint", "URL",
            "http[s]://HOST[:PORT] of an S3-compatible server (MinIO, Ceph RGW, s3rver; path-style "
            "addressing); empty: AWS (virtual-hosted style)",
            field<&serve_config::s3_endpoint>(), 0, UINT64_MAX, check_s3_endpoint},
    setting{"s3-access-key-id", "KEY-ID", "The access key id; empty: AWS_ACCESS_KEY_ID",
            field<&serve_config::s3_access_key_id>()},
    setting{"s3-secret-access-key", "SECRET",
            "The secret access key (settings file only, never printed); empty: AWS_SECRET_ACCESS_KEY",
            field<&serve_config::s3_secret_access_key>(), 0, UINT64_MAX, nullptr, true},
    setting{"s3-session-token", "TOKEN",
            "A session token of temporary credentials (settings file only, never printed); empty: "
            "AWS_SESSION_TOKEN",
            field<&serve_config::s3_session_token>(), 0, UINT64_MAX, nullptr, true},
    setting{"local-bytes", "BYTES",
            "With cold: the most its stream data (a cluster node's raft log included) may take on the node's "
            "disk; past it the bytes already in the bucket "
            "are dropped, and appends get 503 + Retry-After while the bytes not yet in the bucket fill it "
            "(the bucket cannot be reached). 0: no budget",
            field<&serve_config::local_bytes>(), 0, UINT64_MAX, check_local_bytes},
    setting{"cold-keep-bytes", "BYTES",
            "With cold: stream bytes the node keeps on its disk before it drops those already in the bucket "
            "(reads of them then go to the bucket); 0: local-bytes less three segments per shard (per lane "
            "on a cluster node, less room for its groups' raft logs too), or never without it",
            field<&serve_config::cold_keep_bytes>(), 0, UINT64_MAX, check_cold_keep_bytes},
    setting{"cold-object-bytes", "BYTES", "With cold: an object is cut once it holds this many bytes",
            field<&serve_config::cold_object_bytes>(), 64 * kib, 16 * 1024 * kib - 64 * kib},
    setting{"cold-max-age-ms", "MS",
            "With cold: an object is sent once its oldest bytes waited this long, however small",
            field<&serve_config::cold_max_age_ms>(), 10, 3'600'000},
    setting{"cold-gc-grace-ms", "MS",
            "With cold: an object nothing names any more (a deleted or expired stream's, an orphan) is "
            "deleted from the bucket once it stayed so this long; the bucket is listed every half of it "
            "(at most once a second)",
            field<&serve_config::cold_gc_grace_ms>(), 1'000, 7 * 24 * 3'600'000ull},
    setting{
        "cold-snapshot-interval-ms", "MS",
        "With cold: how often each shard (a cluster: each raft group's leader) uploads a restore snapshot "
        "(its state, with the bytes not yet in objects) while its log grows; what --restore rebuilds a "
        "node from",
        field<&serve_config::cold_snapshot_interval_ms>(), 100, 24 * 3'600'000ull},
    setting{"restore", "true|false",
            "With cold, on an empty data directory: rebuild the node (in a cluster: every node, each with "
            "--restore) from the bucket's newest restore snapshots before it starts (docs/cold-tier.md, "
            "\"Restore\"); a directory with data is refused",
            field<&serve_config::restore>()},
    // Cluster mode (docs/operations.md, "Cluster"); validate() checks them together
    // (cluster::validate).
    setting{"node-id", "N",
            "Run as node N of a Raft cluster (its id in peers): every stream replicated on every node, any "
            "node takes any request. Needs peer-listen and peers; 0: run alone. A data directory stays "
            "tied to the node id it was created with",
            field<&serve_config::cluster, &cluster::cluster_options::node_id>()},
    setting{"peer-listen", "HOST:PORT",
            "Address (IPv4 or localhost) where this node accepts its peers' connections; with node-id only",
            peer_listen_access, 0, UINT64_MAX, check_peer_listen},
    setting{"peers", "ID=HOST:PORT,...",
            "Every node of the cluster, this one included, and the address its peers reach it at, e.g. "
            "1=10.0.0.1:5437,2=10.0.0.2:5437,3=10.0.0.3:5437 (at most 7 nodes); with node-id only",
            peers_access},
    setting{"raft-groups", "N",
            "Raft groups the streams are spread over (by path), each replicated on every node; fixed when "
            "the cluster's data directories are created: every node must have the same",
            field<&serve_config::cluster, &cluster::cluster_options::groups>(), 1, cluster::max_groups},
    setting{"raft-lanes", "N",
            "Lanes the raft groups are split over on every node (group g on lane g modulo N), each with its "
            "own stream state, data log, raft log and peer connections, lane l on core l modulo threads: "
            "set it to the cores of a node. Fixed when the cluster's data directories are created: every "
            "node must have the same",
            field<&serve_config::cluster, &cluster::cluster_options::lanes>(), 1, cluster::max_lanes},
    setting{"balance-leaders", "true|false",
            "Hand the leadership of raft groups over so that every node of the cluster leads about as many "
            "(group g prefers the g-th node, modulo the node count, when that node is connected). Off: "
            "leaders stay where elections put them",
            field<&serve_config::cluster, &cluster::cluster_options::balance_leaders>()},
    setting{"election-timeout-ms", "MS",
            "Raft's election timeout (set it alike on every node): a follower that hears nothing of a "
            "group from its leader for 1-2 times this stands for election, a leader that hears from no "
            "majority for this long steps down; leaders send heartbeats every tenth of it. Longer keeps "
            "leaders through stalls of an overloaded machine, shorter replaces a dead leader sooner",
            field<&serve_config::cluster, &cluster::cluster_options::election_timeout_ms>(),
            cluster::min_election_timeout_ms, cluster::max_election_timeout_ms},
    setting{"join", "true|false",
            "Start as a new node of a running cluster: bootstrap nothing, wait to be added (POST "
            "/cluster/members?id=N&address=HOST:PORT on a node of the cluster), then catch up from the "
            "others. peers lists every node, this one included; with node-id only",
            field<&serve_config::cluster, &cluster::cluster_options::join>()},
    setting{"raft-snapshot-entries", "N",
            "A raft group snapshots its state (metadata and references to the data log) after this many "
            "entries since its last snapshot, and then forgets the entries it covers; 0: never (memory and "
            "the node log keep every entry)",
            field<&serve_config::cluster, &cluster::cluster_options::snapshot_entries>(), 0, 1u << 30},
    setting{"raft-snapshot-bytes", "BYTES",
            "A raft group also snapshots after this many bytes of entries since its last snapshot",
            field<&serve_config::cluster, &cluster::cluster_options::snapshot_bytes>(), 1 << 16,
            std::uint64_t{1} << 40},
    setting{
        "raft-snapshot-trailing", "N",
        "Entries a raft group keeps after a snapshot for followers a little behind; a follower further "
        "behind gets the snapshot installed (the records it references copied over the peer link in chunks)",
        field<&serve_config::cluster, &cluster::cluster_options::snapshot_trailing>(), 0, 1u << 30},
    setting{"raft-segment-bytes", "BYTES",
            "Size at which a raft node-log segment file is rolled; the stream bytes a node applies stay in "
            "these segments, which are deleted once no stream and no snapshot references them",
            field<&serve_config::cluster, &cluster::cluster_options::log_segment_bytes>(), 1 << 16,
            std::uint64_t{1} << 34},
    setting{"raft-proposal-bytes", "BYTES",
            "Bytes of writes this node has proposed to raft and not yet seen applied; further writes wait "
            "in arrival order until some are (up to 10 s, then 503 + Retry-After, nothing written), so "
            "that a burst of large writes reaches raft a few MiB at a time; 0: no limit",
            field<&serve_config::cluster, &cluster::cluster_options::proposal_bytes>(), 0, UINT64_MAX},
    setting{"fork-sweep-secs", "SECONDS",
            "How often the leader of a raft group looks for fork references whose fork no longer exists "
            "(a release lost to a crash or a timeout) and gives them back, so that a deleted source is "
            "erased; only references older than 2 minutes are looked at; 0: never",
            field<&serve_config::cluster, &cluster::cluster_options::fork_sweep_secs>(), 0, 86'400},
    // Mutual TLS on the peer links (docs/operations.md, "Cluster"): all three or none.
    setting{"peer-tls-cert", "FILE",
            "PEM certificate chain (leaf first) this node presents on its peer links; with peer-tls-key "
            "and peer-tls-ca every peer connection is mutual TLS 1.3. The certificate must name this node "
            "as weir-node-N (N its node-id) in a subjectAltName DNS name or its subject CN; empty: plain "
            "TCP",
            field<&serve_config::cluster, &cluster::cluster_options::peer_tls_cert>()},
    setting{"peer-tls-key", "FILE", "PEM private key of peer-tls-cert",
            field<&serve_config::cluster, &cluster::cluster_options::peer_tls_key>()},
    setting{"peer-tls-ca", "FILE",
            "PEM certificate(s) of the cluster CA: a peer's certificate must chain to it (and name the node "
            "id the peer claims) or its connection is closed",
            field<&serve_config::cluster, &cluster::cluster_options::peer_tls_ca>()},
};

std::string name_of(const setting& s) {
  return std::string(s.name);
}

std::uint64_t upper_bound(const setting& s) {
  return std::min(s.max, s.access.type_max);
}

void check_range(const setting& s, std::uint64_t v) {
  std::uint64_t hi = upper_bound(s);
  if (v >= s.min && v <= hi) return;
  std::string range = hi == s.access.type_max && s.max == UINT64_MAX
                          ? "at least " + std::to_string(s.min)
                          : "between " + std::to_string(s.min) + " and " + std::to_string(hi);
  throw config_error(name_of(s) + ": " + range + ", got " + std::to_string(v));
}

void set_checked(serve_config& c, const setting& s, setting_value v) {
  if (auto* n = std::get_if<std::uint64_t>(&v)) check_range(s, *n);
  s.access.set(c, v);
}

const char* kind_name(setting_kind k) {
  switch (k) {
    case setting_kind::boolean:
      return "true or false";
    case setting_kind::integer:
      return "a whole number";
    case setting_kind::text:
      return "a string";
  }
  return "?";
}

setting_value from_toml(const setting& s, const toml::node& n) {
  switch (s.access.kind) {
    case setting_kind::boolean:
      if (n.is_boolean()) return *n.value<bool>();
      break;
    case setting_kind::integer:
      if (n.is_integer()) {
        std::int64_t v = *n.value<std::int64_t>();
        if (v < 0) throw config_error(name_of(s) + ": must not be negative, got " + std::to_string(v));
        return static_cast<std::uint64_t>(v);
      }
      break;
    case setting_kind::text:
      if (n.is_string()) return *n.value<std::string>();
      break;
  }
  throw config_error(name_of(s) + ": must be " + kind_name(s.access.kind));
}

}  // namespace

std::span<const setting> settings() {
  return table;
}

const setting* find_setting(std::string_view name) {
  std::string dashed(name);
  for (char& ch : dashed) {
    if (ch == '_') ch = '-';  // the old TOML keys (data_dir) name the same rows
  }
  for (const setting& s : table) {
    if (s.name == dashed) return &s;
  }
  return nullptr;
}

void apply_flag(serve_config& c, const setting& s, std::string_view text) {
  switch (s.access.kind) {
    case setting_kind::boolean:
      if (text == "true" || text == "false") return set_checked(c, s, text == "true");
      throw config_error(name_of(s) + ": expected true or false, got '" + std::string(text) + "'");
    case setting_kind::integer: {
      if (!text.empty() && text.front() == '-') {
        throw config_error(name_of(s) + ": must not be negative, got " + std::string(text));
      }
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
        throw config_error(name_of(s) + ": expected a whole number, got '" + std::string(text) + "'");
      }
      return set_checked(c, s, v);
    }
    case setting_kind::text:
      return set_checked(c, s, std::string(text));
  }
}

namespace {
// [[auth.api-keys]]: name (optional), hash (SHA-256 hex of the key), scope (a list of {prefix, ops}).
auth::api_key load_api_key(const toml::node& n, const std::string& where) {
  const toml::table* t = n.as_table();
  if (!t) throw config_error(where + ": expected a table {name, hash, scope}");
  auth::api_key key;
  bool has_hash = false;
  for (auto&& [k, v] : *t) {
    if (k.str() == "name" && v.is_string()) {
      key.name = *v.value<std::string>();
    } else if (k.str() == "hash" && v.is_string()) {
      auto d = auth::digest_from_hex(*v.value<std::string>());
      if (!d) throw config_error(where + ".hash: 64 hex digits (weir auth hash-key), not the key itself");
      key.hash = *d;
      has_hash = true;
    } else if (k.str() == "scope" && v.is_array()) {
      for (const toml::node& r : *v.as_array()) {
        const toml::table* rt = r.as_table();
        const toml::array* ops = rt ? (*rt)["ops"].as_array() : nullptr;
        std::optional<std::string> prefix = rt ? (*rt)["prefix"].value<std::string>() : std::nullopt;
        if (!rt || !ops || !prefix || rt->size() != 2) {
          throw config_error(where + ".scope: each entry is { prefix = \"/...\", ops = [\"read\", ...] }");
        }
        auth::scope_rule rule;
        if (std::string why = auth::parse_prefix(*prefix, rule); !why.empty()) {
          throw config_error(where + ".scope: '" + *prefix + "': " + why);
        }
        for (const toml::node& o : *ops) {
          auto op = auth::op_from_name(o.value<std::string>().value_or(""));
          if (!op) throw config_error(where + ".scope: ops are read, write, delete and admin");
          rule.ops |= static_cast<auth::op_set>(*op);
        }
        key.granted.rules.push_back(std::move(rule));
      }
    } else {
      throw config_error(where + ": unknown or mistyped member '" + std::string(k.str()) +
                         "' (name and hash are strings, scope a list)");
    }
  }
  if (!has_hash) throw config_error(where + ": hash missing");
  return key;
}

void load_auth_table(serve_config& c, const toml::node& n, const std::string& source) {
  const toml::table* t = n.as_table();
  if (!t) throw config_error("config " + source + ": 'auth' must be a table ([[auth.api-keys]])");
  for (auto&& [k, v] : *t) {
    const toml::array* keys = v.as_array();
    if (k.str() != "api-keys" || !keys) {
      throw config_error("config " + source + ": unknown auth setting '" + std::string(k.str()) +
                         "' (the auth table holds [[auth.api-keys]] only)");
    }
    c.api_keys.clear();
    for (std::size_t i = 0; i < keys->size(); ++i) {
      c.api_keys.push_back(
          load_api_key(*keys->get(i), "config " + source + ": auth.api-keys[" + std::to_string(i) + "]"));
    }
  }
}

void load_table(serve_config& c, const toml::table& t, const std::string& source) {
  std::array<std::string_view, std::size(table)> seen{};  // the key that set each row
  for (auto&& [k, node] : t) {
    if (k.str() == "auth") {
      load_auth_table(c, node, source);
      continue;
    }
    const setting* s = find_setting(k.str());
    if (!s) {
      throw config_error("config " + source + ": unknown setting '" + std::string(k.str()) +
                         "' (weir serve --print-config lists them all)");
    }
    std::string_view& by = seen[static_cast<std::size_t>(s - table.data())];
    if (!by.empty()) {
      throw config_error("config " + source + ": '" + name_of(*s) + "' is set twice ('" + std::string(by) +
                         "' and '" + std::string(k.str()) + "')");
    }
    by = k.str();
    try {
      set_checked(c, *s, from_toml(*s, node));
    } catch (const config_error& e) {
      throw config_error("config " + source + ": " + e.what());
    }
  }
}
}  // namespace

void load_config_text(serve_config& c, std::string_view toml_text, const std::string& source) {
  try {
    load_table(c, toml::parse(toml_text, source), source);
  } catch (const toml::parse_error& e) {
    throw config_error("config " + source + ": " + std::string(e.description()));
  }
}

void load_config_file(serve_config& c, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw config_error("config " + path + ": " + std::string(e.description()));
  }
  load_table(c, t, path);
}

std::string to_toml_value(const setting_value& v) {
  std::ostringstream os;
  if (auto* b = std::get_if<bool>(&v)) {
    os << (*b ? "true" : "false");
  } else if (auto* n = std::get_if<std::uint64_t>(&v)) {
    os << *n;
  } else {
    // A TOML basic string (toml.io v1.0.0, "String"): quote, backslash and control characters escaped.
    os << '"';
    for (char ch : std::get<std::string>(v)) {
      auto u = static_cast<unsigned char>(ch);
      if (ch == '"' || ch == '\\') {
        os << '\\' << ch;
      } else if (u < 0x20 || u == 0x7f) {
        static constexpr char hex[] = "0123456789ABCDEF";
        os << "\\u00" << hex[u >> 4] << hex[u & 0xf];
      } else {
        os << ch;
      }
    }
    os << '"';
  }
  return os.str();
}

std::string print_config(const serve_config& c) {
  std::string out =
      "# weir serve: the effective configuration (defaults < --config file < flags).\n"
      "# Start from it with: weir serve --config FILE\n";
  for (const setting& s : table) {
    out += "\n# " + std::string(s.help) + "\n";
    if (s.secret) {
      const bool set = s.access.get(c) != s.access.get(serve_config{});
      out += "# " + name_of(s) + (set ? " is set (not shown)\n" : " is not set\n");
      continue;
    }
    out += name_of(s) + " = " + to_toml_value(s.access.get(c)) + "\n";
  }
  if (!c.api_keys.empty()) {
    out +=
        "\n# Static API keys: the SHA-256 of each key (weir auth hash-key) and its scope "
        "(docs/security.md).\n";
  }
  for (const auth::api_key& k : c.api_keys) {
    out += "[[auth.api-keys]]\nname = " + to_toml_value(k.name) + "\nhash = \"" + auth::to_hex(k.hash) +
           "\"\nscope = [";
    for (std::size_t i = 0; i < k.granted.rules.size(); ++i) {
      const auth::scope_rule& r = k.granted.rules[i];
      out += std::string(i ? ", " : "") +
             "{ prefix = " + to_toml_value(r.prefix + (r.any_suffix ? "*" : "")) + ", ops = [";
      bool first = true;
      for (auth::op o : {auth::op::read, auth::op::write, auth::op::remove, auth::op::admin}) {
        if ((r.ops & static_cast<auth::op_set>(o)) == 0) continue;
        out += std::string(first ? "" : ", ") + "\"" + std::string(auth::op_name(o)) + "\"";
        first = false;
      }
      out += "] }";
    }
    out += "]\n";
  }
  return out;
}

void validate(const serve_config& c) {
  for (const setting& s : table) {
    if (auto v = s.access.get(c); auto* n = std::get_if<std::uint64_t>(&v)) check_range(s, *n);
    if (s.check) {
      if (std::string why = s.check(c); !why.empty()) throw config_error(name_of(s) + ": " + why);
    }
  }
  // The cluster settings together (node-id needs peer-listen and peers, and is one of the peers...); its
  // reasons begin with the setting they concern.
  if (status st = cluster::validate(c.cluster); !st) throw config_error(st.err().reason);
}

}  // namespace weir::app

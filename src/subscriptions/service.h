// Subscriptions (PROTOCOL.md sections 6-7): durable cursors over sets of streams, delivered by signed
// webhook or by pull-wake (claim / ack / release), with generation fencing and leases.
//
// CONTRACT (written before the implementation, shared by two helpers: the subscriptions helper
// implements `service`; the protocol/server helper implements `stream_host` and wires `service` into
// `weir serve`). Either may add members; neither breaks these.
//
// Threading: the service lives on one core, its `home` loop (core 0). Every method of `service` must be
// called on that loop; other cores reach it with home.post(...). `stream_host` callbacks may complete on
// any thread of their choosing but the service re-posts them onto its home loop before touching state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "http/exchange.h"

namespace weir::io {
class event_loop;
}

namespace weir::subscriptions {

// A stream as the subscription layer sees it. `path` is the full request path of the stream (e.g.
// "/v1/stream/events/abc"); the service turns it into stream-root-relative form itself.
struct stream_info {
  std::string path;
  std::string tail_offset;  // the stream's current Stream-Next-Offset
  std::string content_type;
};

// What the service needs from the stream layer (implemented by src/server).
class stream_host {
 public:
  virtual ~stream_host() = default;
  // Every live (not deleted, not expired) stream whose path starts with `prefix`.
  virtual void list_streams(std::string prefix, std::function<void(std::vector<stream_info>)> done) = 0;
  // One stream, or nullopt if it does not exist.
  virtual void get_stream(std::string path, std::function<void(std::optional<stream_info>)> done) = 0;
  // Appends `body` (one JSON message, content type application/json) to the wake stream at `path` via
  // the normal command path. Result: the new tail offset, or an error (e.g. no such stream).
  virtual void append_json(std::string path, std::string body,
                           std::function<void(result<std::string>)> done) = 0;
};

// A control request taken apart (method, body, Authorization header value, and the path split as for
// handle()). Views need to live only during the call: a caller that hops cores copies the strings first
// and passes views of its copies.
struct control_request {
  http::method method = http::method::get;
  std::string_view body;
  std::string_view authorization;  // the Authorization header value, or empty
  std::string_view root;           // e.g. "/v1/stream/"
  std::string_view rest;           // after "__ds/", e.g. "subscriptions/sub-1/claim"
  std::string_view origin;         // e.g. "http://127.0.0.1:4437"
};

struct service_options {
  std::string data_dir;  // signing key persisted at <data_dir>/webhook-signing.key
  // PROTOCOL.md 6.2 / 12.8 development exception: plain HTTP to loopback (setting
  // allow-loopback-webhooks). Off by default.
  bool allow_localhost_webhooks = false;
  std::int64_t default_lease_ttl_ms = 30'000;
  std::vector<std::string> webhook_allow_hosts;  // setting webhook-allow-hosts (url_policy::allow_hosts)
  int max_webhook_retries = 30;                  // setting max-webhook-retries (manager_options)
  std::size_t max_subscriptions = 1'000;         // setting max-subscriptions
  std::size_t max_pattern_bytes = 256;           // setting max-subscription-pattern-bytes
  // One node of a raft cluster (docs/subscriptions.md, "Cluster"): no subscriptions.log; the state is
  // replicated through the raft groups given by attach_cluster(), which must follow before the loops run.
  bool cluster = false;
};

class cluster_port;

class service {
 public:
  service(io::event_loop& home, stream_host& host, const clock_source& clock, service_options opts);
  ~service();

  // A request whose path has a `__ds` segment. `root` is the path up to and including the '/' before
  // `__ds` (e.g. "/v1/stream/"); `rest` is what follows "__ds/" (e.g. "subscriptions/sub-1/claim",
  // "jwks.json"). The service answers through `ex` (now or later). `origin` is scheme://host[:port] as the
  // client addressed the server (from the Host header), for building callback_url and jwks_url.
  void handle(const http::request& req, std::string_view root, std::string_view rest, std::string_view origin,
              http::exchange ex);
  // The same, for a request already taken apart. Answers on ex.loop() (posting there if needed).
  void handle(const control_request& req, http::exchange ex);

  // Stream events, reported by the core that owns the stream after the command committed.
  void on_stream_created(const stream_info& s);
  void on_stream_appended(const stream_info& s);  // tail_offset is the new tail
  void on_stream_deleted(std::string_view path);

  // Thread-safe: whether any subscription exists. The cores that own streams may skip reporting stream
  // events to the home loop while this is false (a subscription created later backfills by listing).
  bool has_subscriptions() const;

  // Stops webhook delivery threads and timers (called before the loops stop).
  void shutdown();

  // Cluster mode (service_options::cluster). Before the loops run: the raft groups, which must outlive
  // the service's use of them (until shutdown()).
  void attach_cluster(cluster_port& port);
  // On the home loop: a committed subscription entry of raft group `group` (every node, log order).
  void apply_entry(std::uint32_t group, std::span<const std::byte> payload);
  // On the home loop: group snapshots (subscription_cluster::snapshot_part / restore_part); empty /
  // nothing restored without a cluster.
  std::vector<std::byte> snapshot_part(std::uint32_t group) const;
  status restore_part(std::uint32_t group, std::span<const std::byte> blob);
  // On the home loop: a leader call (subscription_cluster::serve). `reply(nullopt)`: not the leader.
  void serve_leader_call(std::uint32_t group, std::span<const std::byte> request,
                         std::function<void(std::optional<std::vector<std::byte>>)> reply);

  // On the home loop: figures for GET /metrics.
  struct stats {
    std::uint64_t subscriptions = 0;
    std::uint64_t deliveries_ok = 0;
    std::uint64_t deliveries_failed = 0;
  };
  stats figures() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace weir::subscriptions

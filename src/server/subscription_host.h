// The glue between the stream shards and the subscription service (PROTOCOL.md 6-7): the service
// lives on core 0; `stream_host` answers its questions by asking every shard (or the owner shard)
// through cross-core messages. Built only when weir_subscriptions exists (WEIR_HAVE_SUBSCRIPTIONS).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "http/exchange.h"
#include "streams/state_machine.h"

namespace weir::io {
class event_loop;
}

namespace weir::server {

class node;
class replication;

struct subscriptions_glue {
  virtual ~subscriptions_glue() = default;
  // On core 0.
  virtual void handle(const http::request& req, std::string_view root, std::string_view rest,
                      std::string_view origin, http::exchange ex) = 0;
  virtual void created(const streams::stream_meta& m) = 0;
  virtual void appended(const streams::stream_meta& m) = 0;
  virtual void deleted(const std::string& path) = 0;
  virtual void shutdown() = 0;
  // Cluster mode, before the loops run: the node's raft groups carry the subscriptions' state and route
  // their requests to the leader of each subscription's group (docs/subscriptions.md, "Cluster").
  virtual void attach_cluster(replication& r) = 0;
  // Any core: whether any subscription exists (stream events are not worth a cross-core hop otherwise).
  virtual bool active() const = 0;
  // On core 0: subscriptions held, webhook deliveries answered 2xx and failed (for GET /metrics).
  struct figures {
    std::uint64_t subscriptions = 0;
    std::uint64_t deliveries_ok = 0;
    std::uint64_t deliveries_failed = 0;
  };
  virtual figures stats() const = 0;
};

// nullptr when the build has no subscription service.
std::unique_ptr<subscriptions_glue> make_subscriptions(node& n, io::event_loop& home,
                                                       const clock_source& clock,
                                                       const std::string& data_dir);

}  // namespace weir::server

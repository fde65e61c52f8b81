// cluster_port: what a cluster node's subscription service needs from the raft groups (implemented by
// src/server over its replication; a fake in the unit tests). Every call is made on the home loop and
// every callback runs there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace weir::subscriptions {

class cluster_port {
 public:
  virtual ~cluster_port() = default;

  virtual std::uint64_t node_id() const = 0;
  // The raft group of a subscription (by its key, root + id).
  virtual std::uint32_t group_of(std::string_view key) const = 0;

  struct group_view {
    bool leads = false;      // this node leads the group
    std::uint64_t term = 0;  // the group's current term as this node knows it
  };
  // Every group as this node sees it now, indexed by group id.
  virtual std::vector<group_view> groups() const = 0;
  virtual bool leads(std::uint32_t group) const = 0;

  // Proposes a subscription entry (subscription_replica.h) in `group` only while this node leads it,
  // never forwarded to another node: entries that change subscriptions come from the leader that holds
  // them, and raft then orders every leader's entries before its successor's. `done(true)` once this
  // node applied it; `done(false)` when it was not proposed or its outcome is unknown.
  virtual void propose_here(std::uint32_t group, std::vector<std::byte> payload,
                            std::function<void(bool)> done) = 0;
  // Proposes a subscription entry wherever the group's leader is (a node's signing key).
  virtual void propose(std::uint32_t group, std::vector<std::byte> payload,
                       std::function<void(bool)> done) = 0;
  // `ready(true)` once this node applied everything committed in `group` before the call (a read index);
  // `ready(false)` when no leader confirmed it in time.
  virtual void caught_up(std::uint32_t group, std::function<void(bool)> ready) = 0;
  // Runs `request` on the node leading `group` (subscription_cluster::serve there; here when this node
  // leads) and hands back its answer; an error when no leader answered in time.
  virtual void call_leader(std::uint32_t group, std::vector<std::byte> request,
                           std::function<void(result<std::vector<std::byte>>)> done) = 0;
};

}  // namespace weir::subscriptions

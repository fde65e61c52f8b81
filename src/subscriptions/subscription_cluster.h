// subscription_cluster: a cluster node's side of subscriptions (docs/subscriptions.md, "Cluster").
//
//   * Replicated state. A subscription belongs to the raft group its key (root + id) hashes to. Every
//     change the subscription_manager records (the subscription_log records a single node journals) is
//     proposed in that group instead, by the group's leader only (cluster_port::propose_here), one entry
//     in flight per group so that they commit in the order they were made. Every node applies the
//     committed entries to its subscription_replica.
//   * One node serves and delivers. The manager holds only the subscriptions of the groups this node
//     leads, loaded from the replica once the node has applied everything committed before it led (a
//     read index), so it resumes pending wakes, retry schedules and cursors where the previous leader
//     left them. When the node stops leading a group (or the group's term moves, or one of its entries
//     fails to commit: memory would be ahead of the log), the group's subscriptions are unloaded; they
//     are loaded again from the replica if it leads again.
//   * Any node takes any request. A control request for a subscription goes to the leader of its group
//     (cluster_port::call_leader, a leader call over the peer link, or straight in when this node leads)
//     and its answer comes back once the changes it reports are committed. jwks.json is answered by
//     every node and lists every node's key (each node publishes its own through the replica before it
//     delivers anything), since a webhook is signed by whichever node leads the subscription's group.
//
// Lives on the home loop; every method runs there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "subscriptions/cluster_port.h"
#include "subscriptions/signing_key.h"
#include "subscriptions/subscription_manager.h"
#include "subscriptions/subscription_replica.h"

namespace weir::subscriptions {

// The raft group whose entries publish the nodes' signing keys.
inline constexpr std::uint32_t key_group = 0;

class subscription_cluster {
 public:
  struct options {
    std::int64_t poll_ms = 100;              // how often leadership is looked at
    std::size_t max_entry_bytes = 1u << 20;  // records per proposed entry (more wait for the next one)
  };

  // `loaded_changed` runs after the manager gained or lost subscriptions (the service counts them).
  subscription_cluster(scheduler& sched, cluster_port& port, std::shared_ptr<const signing_key> key,
                       options opts, std::function<void()> loaded_changed = {});
  ~subscription_cluster();
  subscription_cluster(const subscription_cluster&) = delete;
  subscription_cluster& operator=(const subscription_cluster&) = delete;

  // The manager that holds the led groups' subscriptions; set once, before start(). Its options must
  // come through fill_manager_options().
  void attach(subscription_manager& m) { manager_ = &m; }
  // Sets the manager_options members that connect a manager to this object (replicate, durable, jwks,
  // subscription_count, restore_links_at_start) and clears `persist`.
  void fill_manager_options(manager_options& o);

  // Starts the leadership poll; stop() ends it and stops serving (shutdown).
  void start();
  void stop();
  // One look at leadership (the timer's work; tests call it): loads the groups this node now leads,
  // unloads the others, publishes this node's key until it is in the replica.
  void poll();

  // A committed subscription entry of `group` (every node, in the group's log order).
  void apply(std::uint32_t group, std::span<const std::byte> payload);
  // Group snapshots (docs/subscriptions.md, "Cluster"): the part of the replica that `group`'s entries
  // made (its subscriptions; group 0 also carries the node keys, which are published there), and the
  // restore of such a part (at start from the node log, or installed from the group's leader; a node
  // only installs snapshots of groups it does not lead, and loads a group again when it leads it).
  std::vector<std::byte> snapshot_part(std::uint32_t group) const;
  status restore_part(std::uint32_t group, std::span<const std::byte> blob);
  // A leader call for a subscription of `group`, from this node or another. `reply(nullopt)`: this node
  // does not lead the group (the caller asks the leader it then knows).
  void serve(std::uint32_t group, std::span<const std::byte> request,
             std::function<void(std::optional<std::vector<std::byte>>)> reply);
  // A control request that arrived on this node: jwks.json and requests the manager refuses by their
  // path alone are answered here; every other goes to the leader of its subscription's group.
  void handle(const control_request& req, responder respond);

  const subscription_replica& replica() const { return replica_; }
  // Whether this node serves `group` now (it leads it and loaded its subscriptions).
  bool serving(std::uint32_t group) const;

  // manager_options hooks (public for tests).
  void replicate(const std::string& key, std::string record);
  void durable(const std::string& key, std::function<void(bool)> done);
  std::string jwks_json() const;
  std::size_t subscription_count() const { return replica_.subscriptions().size(); }

 private:
  // Entries of one group proposed together; their waiters learn whether they committed.
  struct batch {
    std::vector<std::function<void(bool)>> waiters;
  };
  struct waiting_call {
    std::vector<std::byte> request;
    std::function<void(std::optional<std::vector<std::byte>>)> reply;
  };
  struct group_state {
    bool active = false;
    std::uint64_t term = 0;                                  // the term it was loaded in
    std::uint64_t activating = 0;                            // the term of a catch-up in flight (0: none)
    std::vector<std::string> pending;                        // records not proposed yet, in order
    std::vector<std::function<void(bool)>> pending_waiters;  // wait for the next proposal
    std::shared_ptr<batch> in_flight;
    std::vector<waiting_call> calls;  // leader calls that wait for the group to be loaded
  };

  void activate(std::uint32_t group, std::uint64_t term);
  void deactivate(std::uint32_t group, const char* why);
  void run_call(std::uint32_t group, std::span<const std::byte> request,
                std::function<void(std::optional<std::vector<std::byte>>)> reply);
  void pump(std::uint32_t group);
  void settled(std::uint32_t group, const std::shared_ptr<batch>& b, bool ok);
  bool key_published() const;
  void publish_key();
  void arm_poll();

  scheduler& sched_;
  cluster_port& port_;
  std::shared_ptr<const signing_key> key_;
  options opts_;
  std::function<void()> loaded_changed_;
  subscription_manager* manager_ = nullptr;
  subscription_replica replica_;
  std::vector<group_state> groups_;
  std::uint64_t poll_timer_ = 0;
  bool key_in_flight_ = false;
  bool stopped_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::subscriptions

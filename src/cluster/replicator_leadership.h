// replicator_leadership: what the leadership of each raft group did on this node, counted and logged.
// libraft 0.15 has no state-change callback, so the replicator hands this watch every group's role,
// term and known leader after each event that can change them (a tick, a message: raft::node_io's
// after-event hook); the watch tells it what changed, and records the change with the cause and the
// detail the replicator found (docs/replication.md, "Elections"). Lines are logged at info level, at
// most lines_per_window per window_ms; the rest are counted and summed up in one line once the window
// is over (a cluster of thousands of groups that all elect at once must not flood the log).
// Single-threaded: the replicator's executor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::cluster {

enum class raft_role : std::uint8_t { unavailable, follower, candidate, leader };
std::string_view role_name(raft_role r);

// Why a group's leadership changed on this node, as far as the replicator can tell.
enum class leadership_cause : std::uint8_t {
  unknown,
  timeout,      // the election timer ran out: nothing from the leader (or no election won) in time
  transfer,     // the leader handed the group over (a TimeoutNow: balance-leaders, a leaving leader)
  link_closed,  // the leader's connection closed, and the replicator let the timer run out early
  higher_term,  // a message of a newer term arrived (another node stands, or leads)
  quorum_lost,  // a leader heard from no majority within an election timeout (libraft check-quorum)
  won,          // the votes of a majority
};
std::string_view cause_name(leadership_cause c);

// Since the node started (Prometheus counters, GET /cluster "leadership").
struct leadership_counts {
  std::uint64_t elections_started = 0;      // this node stood for election (a new term each time)
  std::uint64_t elections_timeout = 0;      // of those: its election timer ran out
  std::uint64_t elections_transfer = 0;     // of those: the leader handed the group to it
  std::uint64_t elections_link_closed = 0;  // of those: the leader's connection closed
  std::uint64_t leaderships_won = 0;        // this node became a group's leader
  std::uint64_t leaderships_lost = 0;       // this node stopped leading a group
  std::uint64_t lost_higher_term = 0;       // of those: a message of a newer term
  std::uint64_t lost_quorum = 0;            // of those: no majority answered in an election timeout
  std::uint64_t leader_changes = 0;         // the leader this node knows of a group became another node
  // balance-leaders: hand-overs this node started, and its passes (one a second) that started none
  // because this node had seen unrest (last_unrest_ms()) within the calm period before.
  std::uint64_t handovers_started = 0;
  std::uint64_t balance_held = 0;
  // A node's lanes together (GET /metrics, /cluster).
  leadership_counts& operator+=(const leadership_counts& o) {
    elections_started += o.elections_started;
    elections_timeout += o.elections_timeout;
    elections_transfer += o.elections_transfer;
    elections_link_closed += o.elections_link_closed;
    leaderships_won += o.leaderships_won;
    leaderships_lost += o.leaderships_lost;
    lost_higher_term += o.lost_higher_term;
    lost_quorum += o.lost_quorum;
    leader_changes += o.leader_changes;
    handovers_started += o.handovers_started;
    balance_held += o.balance_held;
    return *this;
  }
};

class leadership_watch {
 public:
  struct view {
    raft_role role = raft_role::unavailable;
    std::uint64_t term = 0;
    std::uint64_t leader = 0;  // 0: none known
  };
  // What changed in one group between two views (observe()).
  struct transition {
    std::uint32_t group = 0;
    view before, after;
    std::uint64_t previous_leader = 0;  // the last leader known before (0: none ever)
    bool election_started = false;      // became a candidate, or a candidate of a newer term
    bool won = false;                   // became the leader
    bool lost = false;                  // was the leader, is not any more
    bool leader_changed = false;        // knows another leader than the last one it knew
  };

  static constexpr std::int64_t window_ms = 10'000;
  static constexpr unsigned lines_per_window = 20;

  // `groups` groups, all unavailable with no term until first observed.
  leadership_watch(std::uint64_t self, std::uint32_t groups);

  // The group's state now; a transition when something above changed (the view is kept either way).
  std::optional<transition> observe(std::uint32_t group, view now);
  // Counts `t` and logs it (or counts it as suppressed in this window) with its cause and detail.
  void record(const transition& t, leadership_cause cause, std::string_view detail, std::int64_t now_ms);
  // Logs the summary of a window that is over (call now and then: the replicator's sweep).
  void flush(std::int64_t now_ms);
  // When this node last saw unrest: it stood for election in a group that had a leader before, because
  // its timer ran out or that leader's connection closed, or it stopped leading for want of a quorum or on a
  // newer term that was no hand-over (a starved or cut-off cluster). A large negative number until then.
  std::int64_t last_unrest_ms() const { return last_unrest_ms_; }
  void count_handover() { ++counts_.handovers_started; }
  void count_balance_held() { ++counts_.balance_held; }

  const leadership_counts& counts() const { return counts_; }
  const view& current(std::uint32_t group) const { return views_.at(group); }
  std::uint64_t last_leader(std::uint32_t group) const { return last_leader_.at(group); }
  // The lines logged (not suppressed) since the start: what tests look at.
  std::uint64_t lines_logged() const { return lines_logged_; }
  std::uint64_t lines_suppressed() const { return suppressed_total_; }
  // The text of a transition's line (without the log's own prefix).
  std::string describe(const transition& t, leadership_cause cause, std::string_view detail) const;

 private:
  void start_window(std::int64_t now_ms);

  std::uint64_t self_;
  std::vector<view> views_;
  std::vector<std::uint64_t> last_leader_;
  leadership_counts counts_;
  std::int64_t window_start_ms_ = -1;
  std::int64_t last_unrest_ms_ = -1'000'000'000;
  unsigned lines_in_window_ = 0;
  // Suppressed in the current window: how many, and of them how many elections, wins and losses.
  std::uint64_t suppressed_ = 0, suppressed_elections_ = 0, suppressed_won_ = 0, suppressed_lost_ = 0;
  std::uint64_t lines_logged_ = 0, suppressed_total_ = 0;
};

}  // namespace weir::cluster

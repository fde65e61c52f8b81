#include "cluster/replicator_leadership.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/log.h"

namespace weir::cluster {

std::string_view role_name(raft_role r) {
  switch (r) {
    case raft_role::follower:
      return "follower";
    case raft_role::candidate:
      return "candidate";
    case raft_role::leader:
      return "leader";
    case raft_role::unavailable:
      break;
  }
  return "unavailable";
}

std::string_view cause_name(leadership_cause c) {
  switch (c) {
    case leadership_cause::timeout:
      return "election timeout";
    case leadership_cause::transfer:
      return "leadership transfer";
    case leadership_cause::link_closed:
      return "the leader's connection closed";
    case leadership_cause::higher_term:
      return "a newer term";
    case leadership_cause::quorum_lost:
      return "no majority answered within an election timeout";
    case leadership_cause::won:
      return "won the votes of a majority";
    case leadership_cause::unknown:
      break;
  }
  return "cause unknown";
}

leadership_watch::leadership_watch(std::uint64_t self, std::uint32_t groups)
    : self_(self), views_(groups), last_leader_(groups, 0) {}

std::optional<leadership_watch::transition> leadership_watch::observe(std::uint32_t group, view now) {
  if (group >= views_.size()) return std::nullopt;
  view& was = views_[group];
  if (was.role == now.role && was.term == now.term && was.leader == now.leader) return std::nullopt;
  transition t;
  t.group = group;
  t.before = was;
  t.after = now;
  t.previous_leader = last_leader_[group];
  t.election_started =
      now.role == raft_role::candidate && (was.role != raft_role::candidate || now.term > was.term);
  t.won = now.role == raft_role::leader && was.role != raft_role::leader;
  t.lost = was.role == raft_role::leader && now.role != raft_role::leader;
  t.leader_changed = now.leader != 0 && now.leader != last_leader_[group];
  was = now;
  if (now.leader != 0) last_leader_[group] = now.leader;
  if (!t.election_started && !t.won && !t.lost && !t.leader_changed) return std::nullopt;
  return t;
}

std::string leadership_watch::describe(const transition& t, leadership_cause cause,
                                       std::string_view detail) const {
  std::string why(cause_name(cause));
  if (!detail.empty()) why += fmt::format(": {}", detail);
  if (t.election_started) {
    return fmt::format(
        "raft group {}: node {} stands for election in term {} (was {} in term {}, last leader {}; {})",
        t.group, self_, t.after.term, role_name(t.before.role), t.before.term, t.previous_leader, why);
  }
  if (t.won) {
    return fmt::format("raft group {}: node {} leads from term {} (last leader {})", t.group, self_,
                       t.after.term, t.previous_leader);
  }
  if (t.lost) {
    return fmt::format(
        "raft group {}: node {} no longer leads: {} in term {} (led in term {}; leader now {}; {})", t.group,
        self_, role_name(t.after.role), t.after.term, t.before.term, t.after.leader, why);
  }
  return fmt::format("raft group {}: node {} follows node {} in term {} (last leader {})", t.group, self_,
                     t.after.leader, t.after.term, t.previous_leader);
}

void leadership_watch::start_window(std::int64_t now_ms) {
  window_start_ms_ = now_ms;
  lines_in_window_ = 0;
  suppressed_ = suppressed_elections_ = suppressed_won_ = suppressed_lost_ = 0;
}

void leadership_watch::flush(std::int64_t now_ms) {
  if (window_start_ms_ < 0 || now_ms - window_start_ms_ < window_ms) return;
  if (suppressed_ > 0) {
    log::info(
        "raft: node {}: {} more leadership changes in the last {} s not logged one by one ({} elections "
        "started, {} leaderships won, {} lost); totals since start: {} elections, {} won, {} lost",
        self_, suppressed_, window_ms / 1000, suppressed_elections_, suppressed_won_, suppressed_lost_,
        counts_.elections_started, counts_.leaderships_won, counts_.leaderships_lost);
  }
  window_start_ms_ = -1;
  lines_in_window_ = 0;
  suppressed_ = suppressed_elections_ = suppressed_won_ = suppressed_lost_ = 0;
}

void leadership_watch::record(const transition& t, leadership_cause cause, std::string_view detail,
                              std::int64_t now_ms) {
  if (t.election_started) {
    ++counts_.elections_started;
    if (cause == leadership_cause::timeout) ++counts_.elections_timeout;
    if (cause == leadership_cause::transfer) ++counts_.elections_transfer;
    if (cause == leadership_cause::link_closed) ++counts_.elections_link_closed;
  }
  if (t.won) ++counts_.leaderships_won;
  if (t.lost) {
    ++counts_.leaderships_lost;
    if (cause == leadership_cause::higher_term) ++counts_.lost_higher_term;
    if (cause == leadership_cause::quorum_lost) ++counts_.lost_quorum;
  }
  if (t.leader_changed) ++counts_.leader_changes;
  // A group's first election (no leader ever known here: a node starting) is no unrest.
  const bool unrest =
      (t.election_started && t.previous_leader != 0 &&
       (cause == leadership_cause::timeout || cause == leadership_cause::link_closed)) ||
      (t.lost && (cause == leadership_cause::quorum_lost || cause == leadership_cause::higher_term));
  if (unrest) last_unrest_ms_ = std::max(last_unrest_ms_, now_ms);
  // Only a follower's new leader goes unlogged: the leader's own line and the candidates' say it.
  if (!t.election_started && !t.won && !t.lost) return;
  flush(now_ms);
  if (window_start_ms_ < 0) start_window(now_ms);
  if (lines_in_window_ >= lines_per_window) {
    ++suppressed_;
    ++suppressed_total_;
    suppressed_elections_ += t.election_started ? 1 : 0;
    suppressed_won_ += t.won ? 1 : 0;
    suppressed_lost_ += t.lost ? 1 : 0;
    return;
  }
  ++lines_in_window_;
  ++lines_logged_;
  log::info("{}", describe(t, cause, detail));
}

}  // namespace weir::cluster

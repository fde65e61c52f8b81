#include "subscriptions/subscription_cluster.h"

#include <set>

#include "base/log.h"
#include "subscriptions/control_codec.h"
#include "subscriptions/control_responses.h"
#include "subscriptions/glob_matcher.h"
#include "subscriptions/subscription_config.h"

namespace weir::subscriptions {

using namespace detail;

namespace {

// The key (root + id) of the subscription a control request is about; nullopt for jwks.json and for
// paths the manager refuses without looking at any state (it answers those on any node).
std::optional<std::string> subscription_key(const control_request& req) {
  auto parts = split_path(req.rest);
  if (parts.size() < 2 || parts[0] != "subscriptions") return std::nullopt;
  auto id = percent_decode(parts[1]);
  if (!id || !valid_subscription_id(*id)) return std::nullopt;
  return std::string(req.root) + *id;
}

}  // namespace

subscription_cluster::subscription_cluster(scheduler& sched, cluster_port& port,
                                           std::shared_ptr<const signing_key> key, options opts,
                                           std::function<void()> loaded_changed)
    : sched_(sched),
      port_(port),
      key_(std::move(key)),
      opts_(opts),
      loaded_changed_(std::move(loaded_changed)),
      groups_(port.groups().size()) {}

subscription_cluster::~subscription_cluster() {
  *alive_ = false;
  if (poll_timer_ != 0) sched_.cancel_timer(poll_timer_);
}

void subscription_cluster::fill_manager_options(manager_options& o) {
  o.persist = nullptr;
  o.replicate = [this](const std::string& key, std::string record) { replicate(key, std::move(record)); };
  o.durable = [this](const std::string& key, std::function<void(bool)> done) {
    durable(key, std::move(done));
  };
  o.jwks = [this] { return jwks_json(); };
  o.subscription_count = [this] { return subscription_count(); };
  o.restore_links_at_start = true;
}

void subscription_cluster::start() {
  poll();
  arm_poll();
}

void subscription_cluster::stop() {
  stopped_ = true;
  if (poll_timer_ != 0) sched_.cancel_timer(poll_timer_);
  poll_timer_ = 0;
  for (auto& st : groups_) {
    auto calls = std::move(st.calls);
    st.calls.clear();
    for (auto& c : calls) c.reply(std::nullopt);
  }
}

void subscription_cluster::arm_poll() {
  if (stopped_) return;
  poll_timer_ = sched_.add_timer(opts_.poll_ms, [this, alive = std::weak_ptr<bool>(alive_)] {
    auto a = alive.lock();
    if (!a || !*a) return;
    poll_timer_ = 0;
    poll();
    arm_poll();
  });
}

bool subscription_cluster::serving(std::uint32_t group) const {
  return group < groups_.size() && groups_[group].active;
}

// ---------------------------------------------------------------------------------------------------
// Leadership

void subscription_cluster::poll() {
  if (stopped_ || manager_ == nullptr) return;
  const bool published = key_published();
  if (!published) publish_key();
  const std::vector<cluster_port::group_view> views = port_.groups();
  if (groups_.size() < views.size()) groups_.resize(views.size());
  for (std::uint32_t g = 0; g < views.size(); ++g) {
    group_state& st = groups_[g];
    const cluster_port::group_view& v = views[g];
    if (st.active && (!v.leads || v.term != st.term)) {
      deactivate(g, v.leads ? "its term moved" : "this node no longer leads it");
    }
    if (!v.leads) {
      // Leader calls that waited for this node to load the group: their callers ask the new leader.
      auto calls = std::move(st.calls);
      st.calls.clear();
      for (auto& c : calls) c.reply(std::nullopt);
      continue;
    }
    // A node delivers only once its key is in the replica: receivers find it in every node's JWKS.
    if (!st.active && st.activating != v.term && published) activate(g, v.term);
  }
}

void subscription_cluster::activate(std::uint32_t group, std::uint64_t term) {
  groups_[group].activating = term;
  port_.caught_up(group, [this, alive = std::weak_ptr<bool>(alive_), group, term](bool ok) {
    auto a = alive.lock();
    if (!a || !*a) return;
    group_state& st = groups_[group];
    if (st.activating == term) st.activating = 0;
    if (stopped_ || st.active || !ok) return;  // not caught up: the next poll tries again
    const auto views = port_.groups();
    if (group >= views.size() || !views[group].leads || views[group].term != term) return;
    // Everything committed before this term is applied here: the replica holds what the previous
    // leaders recorded, and from now on only this node adds to the group.
    st.active = true;
    st.term = term;
    std::vector<persisted_subscription> subs;
    for (const auto& [key, s] : replica_.subscriptions()) {
      if (port_.group_of(key) == group) subs.push_back(s);
    }
    if (!subs.empty()) {
      log::info("subscriptions: node {} leads raft group {} (term {}): serving {} subscription(s)",
                port_.node_id(), group, term, subs.size());
    }
    manager_->restore(std::move(subs));
    if (loaded_changed_) loaded_changed_();
    auto calls = std::move(st.calls);
    st.calls.clear();
    for (auto& c : calls) run_call(group, c.request, std::move(c.reply));
  });
}

void subscription_cluster::deactivate(std::uint32_t group, const char* why) {
  group_state& st = groups_[group];
  st.active = false;
  st.term = 0;
  std::size_t before = manager_->size();
  manager_->unload([this, group](const std::string& key) { return port_.group_of(key) == group; });
  if (before != manager_->size()) {
    log::info("subscriptions: node {} stops serving raft group {} ({}): {} subscription(s) unloaded",
              port_.node_id(), group, why, before - manager_->size());
  }
  // Changes not proposed yet are lost with the memory that held them (as in a crash); the proposal in
  // flight still tells its waiters how it ended.
  st.pending.clear();
  auto waiters = std::move(st.pending_waiters);
  st.pending_waiters.clear();
  st.in_flight.reset();
  for (auto& w : waiters) w(false);
  if (loaded_changed_) loaded_changed_();
}

// ---------------------------------------------------------------------------------------------------
// Replicated changes

void subscription_cluster::replicate(const std::string& key, std::string record) {
  const std::uint32_t g = port_.group_of(key);
  if (g >= groups_.size() || !groups_[g].active) return;  // unloaded meanwhile: nobody holds it here
  group_state& st = groups_[g];
  st.pending.push_back(std::move(record));
  if (st.pending.size() == 1) {
    // Proposed after the current task, so that the records of one write_changes go in one entry.
    sched_.post([this, alive = std::weak_ptr<bool>(alive_), g] {
      auto a = alive.lock();
      if (a && *a) pump(g);
    });
  }
}

void subscription_cluster::durable(const std::string& key, std::function<void(bool)> done) {
  const std::uint32_t g = port_.group_of(key);
  if (g >= groups_.size() || !groups_[g].active) return done(false);
  group_state& st = groups_[g];
  if (!st.pending.empty()) {
    st.pending_waiters.push_back(std::move(done));
  } else if (st.in_flight) {
    st.in_flight->waiters.push_back(std::move(done));
  } else {
    done(true);  // everything this node recorded for the group is committed
  }
}

void subscription_cluster::pump(std::uint32_t group) {
  group_state& st = groups_[group];
  if (!st.active || st.in_flight || st.pending.empty()) return;
  std::string records;
  std::size_t n = 0;
  while (n < st.pending.size() &&
         (records.empty() || records.size() + st.pending[n].size() <= opts_.max_entry_bytes)) {
    records += st.pending[n];
    ++n;
  }
  st.pending.erase(st.pending.begin(), st.pending.begin() + static_cast<std::ptrdiff_t>(n));
  auto b = std::make_shared<batch>();
  if (st.pending.empty()) {
    b->waiters = std::move(st.pending_waiters);
    st.pending_waiters.clear();
  }
  st.in_flight = b;
  port_.propose_here(group, encode_records_entry(records),
                     [this, alive = std::weak_ptr<bool>(alive_), group, b](bool ok) {
                       auto a = alive.lock();
                       if (a && *a) settled(group, b, ok);
                     });
}

void subscription_cluster::settled(std::uint32_t group, const std::shared_ptr<batch>& b, bool ok) {
  auto waiters = std::move(b->waiters);
  b->waiters.clear();
  for (auto& w : waiters) w(ok);
  group_state& st = groups_[group];
  if (st.in_flight != b) return;  // the group was unloaded meanwhile
  st.in_flight.reset();
  if (!ok) {
    // The manager is now ahead of the log: reload the group from the replica (the next poll does, if
    // this node still leads it).
    log::warn("subscriptions: raft group {}: a change did not commit; reloading the group", group);
    deactivate(group, "a change did not commit");
    return;
  }
  pump(group);
}

void subscription_cluster::apply(std::uint32_t group, std::span<const std::byte> payload) {
  if (auto st = replica_.apply(payload); !st) {
    // The same bytes fail alike on every node.
    log::error("subscriptions: raft group {}: entry not applied: {}", group, st.err().reason);
  }
}

std::vector<std::byte> subscription_cluster::snapshot_part(std::uint32_t group) const {
  return replica_.snapshot_part([&](std::string_view key) { return port_.group_of(key) == group; },
                                group == key_group);
}

status subscription_cluster::restore_part(std::uint32_t group, std::span<const std::byte> blob) {
  return replica_.restore_part(blob, [&](std::string_view key) { return port_.group_of(key) == group; });
}

// ---------------------------------------------------------------------------------------------------
// Signing keys

bool subscription_cluster::key_published() const {
  auto it = replica_.keys().find(port_.node_id());
  return it != replica_.keys().end() && it->second.kid == key_->kid();
}

void subscription_cluster::publish_key() {
  if (key_in_flight_) return;
  key_in_flight_ = true;
  port_.propose(key_group, encode_key_entry(port_.node_id(), node_public_key{key_->kid(), key_->public_x()}),
                [this, alive = std::weak_ptr<bool>(alive_)](bool) {
                  auto a = alive.lock();
                  if (a && *a) key_in_flight_ = false;  // the next poll sends it again if it is not there
                });
}

std::string subscription_cluster::jwks_json() const {
  std::vector<std::pair<std::string, std::string>> keys{{key_->kid(), key_->public_x()}};
  std::set<std::string> seen{key_->kid()};
  for (const auto& [node, k] : replica_.keys()) {
    if (seen.insert(k.kid).second) keys.emplace_back(k.kid, k.x);
  }
  return jwks_json_of(keys);
}

// ---------------------------------------------------------------------------------------------------
// Requests

void subscription_cluster::handle(const control_request& req, responder respond) {
  auto key = subscription_key(req);
  if (!key) return manager_->handle(req, std::move(respond));
  port_.call_leader(
      port_.group_of(*key), encode_control_request(req),
      [respond = std::move(respond)](result<std::vector<std::byte>> r) {
        if (!r) {
          return respond(unavailable("no leader of the subscription's raft group answered in time: retry"));
        }
        auto answer = decode_control_response(*r);
        if (!answer) {
          log::warn("subscriptions: a leader call's answer: {}", answer.err().reason);
          return respond(unavailable("the leader's answer could not be read: retry"));
        }
        respond(std::move(*answer));
      });
}

void subscription_cluster::serve(std::uint32_t group, std::span<const std::byte> request,
                                 std::function<void(std::optional<std::vector<std::byte>>)> reply) {
  if (stopped_ || manager_ == nullptr || group >= groups_.size() || !port_.leads(group)) {
    return reply(std::nullopt);
  }
  group_state& st = groups_[group];
  if (st.active) return run_call(group, request, std::move(reply));
  st.calls.push_back(waiting_call{std::vector<std::byte>(request.begin(), request.end()), std::move(reply)});
  poll();  // starts loading the group now rather than at the next tick
}

void subscription_cluster::run_call(std::uint32_t group, std::span<const std::byte> request,
                                    std::function<void(std::optional<std::vector<std::byte>>)> reply) {
  auto req = decode_control_request(request);
  if (!req) {
    log::warn("subscriptions: a leader call: {}", req.err().reason);
    return reply(encode_control_response(fail(400, "INVALID_REQUEST", "malformed leader call")));
  }
  auto key = subscription_key(req->view());
  if (!key || port_.group_of(*key) != group) {
    return reply(encode_control_response(fail(400, "INVALID_REQUEST", "leader call for another group")));
  }
  auto owned = std::make_shared<owned_control_request>(std::move(*req));
  manager_->handle(owned->view(), [reply = std::move(reply), owned](control_response r) {
    reply(encode_control_response(r));
  });
  if (loaded_changed_) loaded_changed_();  // a PUT may have added one
}

}  // namespace weir::subscriptions

#include "cluster_sim.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cluster_sim_model.h"
#include "raft/node_log.h"
#include "support/sim/delayed_flusher.h"
#include "streams/command_codec.h"

namespace weir::cluster::sim {
namespace {

using std::chrono::milliseconds;

constexpr const char* log_path = "/raft/node.log";
constexpr const char* content_type = "application/octet-stream";
constexpr unsigned election_timeout_ms = 300;
constexpr unsigned heartbeat_ms = 50;

}  // namespace

// Whether `path` (a stream's, "/sN") belongs to group g: the part of the state a group's snapshot holds.
std::function<bool(std::string_view)> cluster::in_group(std::uint32_t g) const {
  return [g, groups = o.groups](std::string_view path) {
    int s = 0;
    if (path.size() < 3 || path.substr(0, 2) != "/s") return false;
    for (char c : path.substr(2)) {
      if (c < '0' || c > '9') return false;
      s = s * 10 + (c - '0');
    }
    return static_cast<std::uint32_t>(s % groups) == g;
  };
}

bool cluster::reaches_majority(const node& n) const {
  if (!n.up) return false;
  std::size_t k = 0;
  for (const auto& m : nodes)
    if (m->up && net.connected(raft::node_id(n.id), raft::node_id(m->id))) ++k;
  return k * 2 > nodes.size();
}

// --- nodes ------------------------------------------------------------------------------------

void cluster::start_node(node& n) {
  n.env->restart();
  n.env->fail_next_syncs(0);  // a disk error that did not strike before the node went down
  ++n.incarnation;
  ++epoch;
  n.ex = std::make_unique<raft::sim_executor>(sched);
  std::vector<std::uint64_t> peers;
  for (const auto& m : nodes)
    if (m->id != n.id) peers.push_back(m->id);
  auto up = [this](std::uint64_t p) { return nodes[p - 1]->up; };
  n.links = std::make_unique<mem_links>(net, n.id, peers, up);
  for (int l = 1; l < o.lanes; ++l)
    n.more_links.push_back(std::make_unique<mem_links>(*lane_nets[l - 1], n.id, peers, up));
  n.sm = std::make_unique<streams::state_machine>();
  n.waits = std::make_unique<applied_waits>(*n.ex, static_cast<std::uint32_t>(o.groups), milliseconds(1000));
  n.applied.assign(static_cast<std::size_t>(o.groups), {});
  replicator::options ro;
  ro.self = n.id;
  for (const auto& m : nodes) ro.addresses.emplace(m->id, fmt::format("n{}", m->id));
  ro.groups = static_cast<std::uint32_t>(o.groups);
  ro.log_path = log_path;
  ro.election_timeout_ms = election_timeout_ms;
  ro.heartbeat_ms = heartbeat_ms;
  ro.submit_timeout = milliseconds(1500);
  ro.read_timeout = milliseconds(1000);
  ro.id_seed = sched.rng()() | 1;
  replicator::callbacks cb;
  cb.apply = [this, &n](std::uint32_t g, std::uint64_t index, entry_kind, std::span<const std::byte> c,
                        std::uint64_t t) { on_apply(n, g, index, c, t); };
  cb.failed = [this, &n](std::uint64_t ticket, submit_error e) { on_failed(n, ticket, e); };
  cb.log_failed = [this, &n, inc = n.incarnation](const error& e) {
    // What the server does (node::fail): the process stops; a supervisor starts it again. Not from
    // inside the node's own executor, which stop_node destroys.
    sched.at(milliseconds(0), [this, &n, inc, reason = e.reason] {
      if (!n.up || n.incarnation != inc || !report.ok) return;
      ++report.disk_failures;
      note("node {}: node log failed ({}): it stops", n.id, reason);
      stop_node(n, true);
      if (!recovering) restart_later(n, 100, 2500);
    });
  };
  if (o.snapshot_threshold != 0) {
    ro.snapshot_threshold = o.snapshot_threshold;
    ro.snapshot_trailing = o.snapshot_trailing;
    cb.snapshot = [this, &n](std::uint32_t g, std::uint64_t) -> result<std::vector<std::byte>> {
      // No data log here: every record goes inline.
      return n.sm->snapshot_part(in_group(g), [](const streams::disk_location&) { return false; });
    };
    cb.restore = [this, &n](std::uint32_t g, std::uint64_t index, std::span<const std::byte> state) {
      return on_restore(n, g, index, state);
    };
    // Half the due snapshots are put off (as the server does while its data log is behind): libraft
    // then asks again at a later apply, under every fault the simulation makes.
    cb.snapshot_later = [this](std::uint32_t) { return sched.uniform(0, 1) == 0; };
  }
  ro.lanes = static_cast<std::uint32_t>(o.lanes);
  for (std::uint32_t l = 0; l < ro.lanes; ++l) {
    replicator::options lo = ro;
    lo.lane = l;
    if (l > 0) lo.log_path = fmt::format("{}-{}", log_path, l);
    if (l > 0) lo.id_seed = sched.rng()() | 1;  // lane 0 keeps ro's: a run of one lane is as before
    auto flusher = std::make_unique<raft::delayed_flusher>(
        *n.ex, [this, &n] { return milliseconds(sched.uniform(0, n.disk_max_ms)); });
    mem_links& links = l == 0 ? *n.links : *n.more_links[l - 1];
    auto r = replicator::open(*n.ex, std::move(flusher), *n.env, links, std::move(lo), cb);
    if (!r) {
      fail(fmt::format("node {}: lane {}'s replicator does not open: {}", n.id, l, r.err().reason));
      return;
    }
    (l == 0 ? n.repl : n.more.emplace_back()) = std::move(r).value();
  }
  // A node's lanes share its executor here (a server's run on loops of their own).
  std::vector<replicator::lane_port> ports;
  for (replicator* r : n.replicators())
    ports.push_back({r, [ex = n.ex.get()](std::function<void()> fn) { ex->post(std::move(fn)); }});
  replicator::connect_lanes(ports);
  n.up = true;
  if (sweeping) start_sweep(n);
  note("node {} starts (incarnation {})", n.id, n.incarnation);
}

// The node's process ends: with `power_loss`, unsynced bytes are gone too (half the time a torn prefix
// of them survives). Queued tasks never run; every client waiting on the node learns nothing more.
void cluster::stop_node(node& n, bool power_loss) {
  if (!n.up) return;
  ++epoch;
  if (power_loss) {
    ++report.crashes;
    if (sched.chance(0.5)) {
      ++report.torn_crashes;
      n.env->crash(sched.rng()());
    } else {
      n.env->crash();
    }
  }
  note("node {} {}", n.id, power_loss ? "loses power" : "is killed");
  n.up = false;
  n.ex->halt();
  if (n.sweep) report.releases_recovered += n.sweep->stats().recovered;
  n.sweep.reset();
  for (const replicator* r : n.replicators()) {
    report.snapshots_taken += r->snapshots_taken();
    report.snapshots_deferred += r->snapshots_deferred();
    count_leadership(*r);
  }
  n.more.clear();
  n.repl.reset();
  n.waits.reset();
  n.more_links.clear();
  n.links.reset();
  n.sm.reset();
  n.ex.reset();
  auto writes = std::move(n.writes);
  auto waiting_reads = std::move(n.reads);
  n.writes.clear();
  n.reads.clear();
  for (auto& [ticket, a] : writes) end_write(a, ending::node_lost, nullptr);
  auto side = std::move(n.side_writes);
  n.side_writes.clear();
  for (auto& [ticket, done] : side) sched.at(milliseconds(0), [done = std::move(done)] { done(nullptr); });
  for (auto& [serial, a] : waiting_reads) end_read(a, n, false, true);
}

void cluster::restart_later(node& n, std::int64_t lo, std::int64_t hi) {
  sched.at(milliseconds(sched.uniform(lo, hi)), [this, &n] {
    if (!n.up && !recovering && report.ok) start_node(n);
  });
}

// --- the state machine of each node ------------------------------------------------------------

void cluster::on_apply(node& n, std::uint32_t g, std::uint64_t index, std::span<const std::byte> bytes,
                       std::uint64_t ticket) {
  ++report.entries_applied;
  std::string cmd(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto [it, inserted] = canonical[g].try_emplace(index, cmd);
  if (!inserted && it->second != cmd)
    return fail(fmt::format("group {} index {}: node {} applied another command than was applied before", g,
                            index, n.id));
  auto& mine = n.applied[g];
  if (!mine.empty() && mine.back() >= index)
    return fail(fmt::format("group {}: node {} applied index {} after {}", g, n.id, index, mine.back()));
  mine.push_back(index);
  auto c = streams::decode(cmd);
  if (!c) return fail(fmt::format("group {} index {}: undecodable command: {}", g, index, c.err().reason));
  // What replica::raft_lane does: the generation of a created stream, and the place of a fork
  // reference a retain takes (which its outcome carries for the fork's create), come from its log position.
  n.sm->set_entry_place(g, index);
  streams::outcome out = n.sm->apply(*c);
  link_forks(n, *c, out);
  // What replica::raft_lane does: reads of forks waiting for this group go on after this apply.
  n.waits->applied(g, index);
  if (ticket == 0) return;
  if (auto side = n.side_writes.find(ticket); side != n.side_writes.end()) {
    // Answered after this apply returns, like the server's.
    sched.at(milliseconds(0), [done = std::move(side->second), out = std::move(out)] { done(&out); });
    n.side_writes.erase(side);
    return;
  }
  auto w = n.writes.find(ticket);
  if (w == n.writes.end() || w->second.answered)
    return fail(fmt::format("node {}: ticket {} answered by group {} index {}, but {}", n.id, ticket, g,
                            index,
                            w == n.writes.end() ? "no such ticket is waiting" : "it was answered before"));
  attempt& a = w->second;
  if (ops[a.op].command != cmd)
    return fail(
        fmt::format("node {}: ticket {} (op {}) answered by group {} index {}, which holds another "
                    "command",
                    n.id, ticket, a.op, g, index));
  a.answered = true;
  // Answer after this apply returns, like the server (the client may send its next request at once).
  n.ex->post([this, &n, ticket, out = std::move(out)] {
    auto found = n.writes.find(ticket);
    if (found == n.writes.end()) return;
    attempt done = found->second;
    n.writes.erase(found);
    end_write(done, ending::answered, &out);
  });
}

// What replica::raft_lane::apply_committed does: a fork's create links it to its source's log when the source
// is here, and a source's create links the forks applied before it (its group was behind).
void cluster::link_forks(node& n, const streams::command& c, const streams::outcome& out) {
  const auto* create = std::get_if<streams::create_command>(&c);
  if (create == nullptr || !out.created) return;
  for (const auto& link : n.sm->forks_to_stitch()) {
    if (link.path != create->path && link.source != create->path) continue;
    if (auto log = n.sm->log_of(link.source)) n.sm->stitch_fork(link.path, std::move(log));
  }
}

// A snapshot of group g at `index` replaces the node's part of the state: made by a node that applied
// every committed entry up to `index`, so those entries are all in `canonical`.
status cluster::on_restore(node& n, std::uint32_t g, std::uint64_t index, std::span<const std::byte> state) {
  const auto& committed = canonical[g];
  if (auto st = n.sm->restore_part(state, in_group(g)); !st) {
    fail(fmt::format("group {}: node {} cannot restore the snapshot at {}: {}", g, n.id, index,
                     st.err().reason));
    return st;
  }
  auto& mine = n.applied[g];
  if (!mine.empty() && mine.back() > index)
    fail(fmt::format("group {}: node {} restored a snapshot at {} after applying {}", g, n.id, index,
                     mine.back()));
  mine.clear();
  for (const auto& [i, cmd] : committed)
    if (i <= index) mine.push_back(i);
  n.waits->applied(g, index);
  ++report.snapshots_restored;
  note("node {} restores group {} at {}", n.id, g, index);
  return {};
}

void cluster::on_failed(node& n, std::uint64_t ticket, submit_error e) {
  if (auto side = n.side_writes.find(ticket); side != n.side_writes.end()) {
    sched.at(milliseconds(0), [done = std::move(side->second)] { done(nullptr); });
    n.side_writes.erase(side);
    return;
  }
  auto w = n.writes.find(ticket);
  if (w == n.writes.end() || w->second.answered)
    return fail(fmt::format("node {}: ticket {} failed, but {}", n.id, ticket,
                            w == n.writes.end() ? "no such ticket is waiting" : "it was answered before"));
  attempt a = w->second;
  n.writes.erase(w);
  end_write(a, e == submit_error::no_leader ? ending::no_leader : ending::unknown, nullptr);
}

// --- clients ------------------------------------------------------------------------------------

op& cluster::new_op(client& c, op_kind kind, int stream) {
  op& p = ops.emplace_back();
  p.id = ops.size() - 1;
  p.kind = kind;
  p.client = c.id;
  p.stream = stream;
  const std::int64_t now = sched.now_ms();
  if (kind == op_kind::create) {
    streams::create_command cc;
    cc.path = path_of(stream);
    cc.content_type = content_type;
    cc.now_ms = now;
    p.command = streams::encode(cc);
    c.again = p.id;
  } else if (kind == op_kind::fork) {
    // Step 1, in the source's group; the create follows once it is answered (end_write).
    streams::fork_retain_command r;
    r.source = path_of(source_of(stream));
    r.now_ms = now;
    r.fork = path_of(stream);  // as the server's retains name their fork (what the fork sweep looks for)
    p.command = streams::encode(r);
    forking[static_cast<std::size_t>(stream)] = true;
    c.again = p.id;
  } else if (kind != op_kind::read) {
    streams::append_command ac;
    ac.path = path_of(stream);
    ac.content_type = content_type;
    ac.body.bytes = streams::make_chunk(token_of(p.id));
    ac.now_ms = now;
    if (kind == op_kind::producer) {
      // Now and then the producer restarts with a new epoch (which must begin at seq 0).
      if (c.next_seq > 0 && sched.chance(0.05)) {
        ++c.epoch;
        c.next_seq = 0;
      }
      ac.producer = streams::producer_ref{c.producer_id, c.epoch, c.next_seq++};
      c.again = p.id;
      c.producer_ops.push_back(p.id);
    }
    p.command = streams::encode(ac);
  }
  return p;
}

void cluster::schedule_client(client& c, std::int64_t lo, std::int64_t hi) {
  sched.at(milliseconds(sched.uniform(lo, hi)), [this, &c] { client_step(c); });
}

void cluster::client_step(client& c) {
  if (!report.ok || c.busy || c.done) return;
  std::uint64_t id = c.again;
  if (id == 0) {
    if (recovering) {
      if (c.final_ops == 2) {
        c.done = true;
        note("client {} done", c.id);
        return;
      }
      // One append to a stream of its own (every group gets a new command), then one read.
      const int s = c.id % o.streams;
      if (!ready[static_cast<std::size_t>(s)]) {
        id = new_op(c, op_kind::create, s).id;
      } else {
        ++c.final_ops;
        id = new_op(c, c.final_ops == 1 ? op_kind::plain : op_kind::read, s).id;
      }
    } else if (c.read_next >= 0) {
      id = new_op(c, op_kind::read, c.read_next).id;
      c.read_next = -1;
    } else {
      const auto pick = sched.uniform(0, 99);
      int s = pick < 35 ? c.home : static_cast<int>(sched.uniform(0, o.streams - 1));
      if (pick >= 35 && o.forks > 0 && sched.chance(0.1))
        s = o.streams + static_cast<int>(sched.uniform(0, o.forks - 1));
      op_kind k = pick < 35 ? op_kind::producer : pick < 65 ? op_kind::plain : op_kind::read;
      if (is_fork(s)) {
        // Forks are made once and only read (their content is their source's prefix).
        const auto f = static_cast<std::size_t>(s);
        const bool can_fork = !forking[f] && ready[static_cast<std::size_t>(source_of(s))];
        k = can_fork && k != op_kind::read ? op_kind::fork : op_kind::read;
      } else if (!ready[static_cast<std::size_t>(s)] && k != op_kind::read) {
        k = op_kind::create;
      }
      id = new_op(c, k, s).id;
    }
  }
  node& n = *nodes[static_cast<std::size_t>(sched.uniform(0, o.nodes - 1))];
  start_attempt(c, ops[id], n);
}

void cluster::start_attempt(client& c, op& p, node& n) {
  if (!n.up) {  // connection refused: nothing was sent
    schedule_client(c, 5, 50);
    return;
  }
  c.busy = true;
  attempt a;
  a.op = p.id;
  a.epoch = epoch;
  a.minority = !reaches_majority(n);
  a.start_seq = ++events;
  if (p.attempts++ == 0) {
    p.start_seq = a.start_seq;
    p.start_ms = sched.now_ms();
  }
  const std::uint32_t g =
      p.kind == op_kind::fork && p.stage == 0 ? group_of(source_of(p.stream)) : group_of(p.stream);
  if (p.kind == op_kind::read) {
    const std::uint64_t serial = n.next_read++;
    n.reads.emplace(serial, a);
    auto finish = [this, &n, serial](bool ok) {
      auto it = n.reads.find(serial);
      if (it == n.reads.end()) return fail(fmt::format("node {}: read {} answered twice", n.id, serial));
      attempt done = it->second;
      n.reads.erase(it);
      end_read(done, n, ok, false);
    };
    n.lane_of(g).read_index(g, [this, &n, path = path_of(p.stream), finish](bool ok) {
      if (!ok) return finish(false);
      wait_for_sources(n, path, finish);
    });
    return;
  }
  ++report.submits;
  const std::uint64_t ticket =
      n.lane_of(g).submit(g, std::as_bytes(std::span(p.command.data(), p.command.size())));
  if (!n.writes.emplace(ticket, a).second) fail(fmt::format("node {}: ticket {} given twice", n.id, ticket));
}

// What replica::raft_lane::wait_for_sources does after a read index: a fork is read once its
// source's group applied the retain its create recorded, up the chain of forks.
void cluster::wait_for_sources(node& n, const std::string& path, std::function<void(bool)> done) {
  auto first = n.sm->fork_wait_of(path);
  if (!first) return done(true);
  if (n.waits->applied_index(first->origin.group) < first->origin.index) ++report.fork_waits;
  n.waits->wait_chain(
      [&n, at = path]() mutable -> std::optional<applied_waits::position> {
        auto w = n.sm->fork_wait_of(at);
        if (!w) return std::nullopt;
        at = w->source;
        return applied_waits::position{w->origin.group, w->origin.index};
      },
      std::move(done));
}

void cluster::end_write(const attempt& a, ending e, const streams::outcome* out) {
  op& p = ops[a.op];
  client& c = clients[static_cast<std::size_t>(p.client)];
  c.busy = false;
  if (a.minority && a.epoch == epoch) {
    ++report.minority_checks;
    if (e == ending::answered)
      fail(fmt::format("op {} acknowledged by a node that could not reach a majority since it was sent",
                       p.id));
  }
  switch (e) {
    case ending::answered:
      break;
    case ending::unknown:
      ++report.failed_unknown;
      break;
    case ending::no_leader:
      ++report.failed_no_leader;
      p.no_leader = true;
      break;
    case ending::node_lost:
      ++report.lost_with_node;
      break;
  }
  if (e != ending::answered) {
    note("op {} attempt fails ({})", p.id, static_cast<int>(e));
    schedule_client(c, 10, 100);
    return;
  }
  if (out->code != streams::errc::ok) {
    return fail(fmt::format("op {} (client {}, stream {}) answered with streams error {}", p.id, p.client,
                            p.stream, static_cast<int>(out->code)));
  }
  if (p.kind == op_kind::fork && p.stage == 0) {
    // The retain is applied on this node: the fork's create, with the retain's place, as the server
    // builds it (stream_shard::create_fork), sent again until answered.
    if (!out->resolution || !out->resolution->origin)
      return fail(fmt::format("fork op {}: its retain was answered without a resolution or origin", p.id));
    streams::create_command cc;
    cc.path = path_of(p.stream);
    cc.now_ms = sched.now_ms();
    streams::fork_spec f;
    f.source = path_of(source_of(p.stream));
    f.resolved = *out->resolution;
    f.resolved.source_log.reset();
    f.resolved.retained = true;
    cc.fork = std::move(f);
    p.command = streams::encode(cc);
    p.stage = 1;
    note("fork op {}: retain of stream {} applied at group {} index {}, point {}", p.id, source_of(p.stream),
         out->resolution->origin->group, out->resolution->origin->index, out->resolution->point.value());
    schedule_client(c, 0, 10);
    return;
  }
  if (p.ack_seq == 0) {
    p.ack_seq = ++events;
    p.ack_ms = sched.now_ms();
  }
  if (c.again == p.id) c.again = 0;
  if (p.kind == op_kind::create || p.kind == op_kind::fork) {
    if (!ready[static_cast<std::size_t>(p.stream)])
      created_seq[static_cast<std::size_t>(p.stream)] = p.ack_seq;
    ready[static_cast<std::size_t>(p.stream)] = true;
    if (p.kind == op_kind::fork) {
      ++report.forks;
      c.read_next = p.stream;
    }
  } else {
    ++report.acked;
    if (p.kind == op_kind::producer) ++report.producer_acked;
    if (out->duplicate) ++report.duplicates;
  }
  schedule_client(c, 0, 30);
}

void cluster::end_read(const attempt& a, node& n, bool ok, bool lost) {
  op& p = ops[a.op];
  client& c = clients[static_cast<std::size_t>(p.client)];
  c.busy = false;
  if (a.minority && a.epoch == epoch) {
    ++report.minority_checks;
    if (ok)
      fail(fmt::format("read op {} served by node {}, which could not reach a majority since it began", p.id,
                       n.id));
  }
  if (lost) {
    ++report.lost_with_node;
  } else if (!ok) {
    ++report.reads_refused;
  } else {
    ++report.reads;
    if (is_fork(p.stream)) ++report.fork_reads;
    read_record r;
    r.op = p.id;
    r.stream = p.stream;
    r.node = n.id;
    r.start_seq = a.start_seq;
    r.end_seq = ++events;
    r.start_ms = p.start_ms;
    r.end_ms = sched.now_ms();
    r.exists = read_stream(*n.sm, p.stream, r.content);
    reads.push_back(std::move(r));
  }
  schedule_client(c, 0, 30);
}

// The whole content of the stream as the state machine holds it; false if there is no such stream.
bool cluster::read_stream(const streams::state_machine& sm, int stream, std::string& out) const {
  out.clear();
  std::optional<streams::stream_offset> from;
  for (;;) {
    auto r = sm.read(path_of(stream), from, std::size_t(1) << 20);
    if (r.code != streams::errc::ok) return false;
    for (const auto& s : r.plan.slices) out.append(s.view());
    if (r.plan.up_to_date || r.plan.bytes == 0) return true;
    from = r.plan.next;
  }
}

// --- faults -----------------------------------------------------------------------------------

void cluster::schedule_chaos() {
  sched.at(milliseconds(sched.uniform(150, 1200)), [this] {
    if (recovering || !report.ok) return;
    chaos_step();
    schedule_chaos();
  });
}

void cluster::chaos_step() {
  const auto pick = sched.uniform(0, 13);
  if (pick <= 2) {
    std::set<raft::node_id> side;
    for (const auto& n : nodes)
      if (sched.chance(0.4)) side.insert(raft::node_id(n->id));
    if (side.empty() || side.size() == nodes.size())
      side = {raft::node_id(nodes[static_cast<std::size_t>(sched.uniform(0, o.nodes - 1))]->id)};
    each_net([&](raft::mem_network& w) { w.partition(side); });
    ++report.partitions;
    ++epoch;
    std::string ids;
    for (raft::node_id id : side) ids += fmt::format(" {}", id.value());
    note("partition: nodes{} cut off", ids);
  } else if (pick <= 4) {
    each_net([](raft::mem_network& w) { w.heal(); });
    ++epoch;
    note("network heals");
  } else if (pick <= 8) {
    std::vector<node*> up;
    for (auto& n : nodes)
      if (n->up) up.push_back(n.get());
    if (up.size() < 2) return;
    // Sometimes two nodes go down together (one rack): only then can a write acknowledged before it was
    // durable on a majority disappear. A kill (pick 8) loses the process, not the page cache.
    const bool power_loss = pick != 8;
    const std::size_t victims = up.size() >= 3 && sched.chance(0.35) ? 2 : 1;
    for (std::size_t k = 0; k < victims; ++k) {
      const std::size_t i =
          static_cast<std::size_t>(sched.uniform(0, static_cast<std::int64_t>(up.size()) - 1));
      node& victim = *up[i];
      up.erase(up.begin() + static_cast<std::ptrdiff_t>(i));
      if (!power_loss) ++report.kills;
      stop_node(victim, power_loss);
      restart_later(victim, 100, 2500);
    }
  } else if (pick >= 12 && sched.chance(0.3)) {
    // A disk error: the node's next sync fails. Its node log is poisoned; the node must stop (it
    // does: log_failed) and recover from what is on disk when it starts again.
    node& n = *nodes[static_cast<std::size_t>(sched.uniform(0, o.nodes - 1))];
    if (!n.up) return;
    n.env->fail_next_syncs(1);
    note("node {}: its next sync fails", n.id);
  } else if (pick >= 12) {
    node& n = *nodes[static_cast<std::size_t>(sched.uniform(0, o.nodes - 1))];
    n.disk_max_ms = raft::random_sync_latency_ms(sched);
    note("node {}: sync latency up to {} ms", n.id, n.disk_max_ms);
  } else {
    const raft::link_faults f = raft::random_link_faults(sched);
    each_net([&](raft::mem_network& w) { w.set_all_links(f); });
    note("links: loss {}, delay 1-{} ms, reorder {}", f.drop, f.max_delay.count(), f.reorder);
  }
}

// Every client finished and every node applied everything its groups committed.
bool cluster::is_quiet() const {
  for (const auto& c : clients)
    if (!c.done) return false;
  std::vector<std::vector<replicator::group_status>> st;
  for (const auto& n : nodes) {
    if (!n->up) return false;
    st.push_back(n->status());
  }
  for (std::size_t g = 0; g < st[0].size(); ++g) {
    if (st[0][g].leader == 0) return false;
    for (const auto& s : st) {
      if (s[g].applied_index != s[g].commit_index || s[g].commit_index != st[0][g].commit_index) return false;
    }
  }
  return true;
}

void cluster::probe_quiet() {
  sched.at(milliseconds(20), [this] {
    if (is_quiet()) {
      quiet = true;
      return;
    }
    probe_quiet();
  });
}

// --- the run ------------------------------------------------------------------------------------

sim_report cluster::run() {
  for (int i = 1; i <= o.nodes; ++i) {
    auto n = std::make_unique<node>();
    n->id = static_cast<std::uint64_t>(i);
    nodes.push_back(std::move(n));
  }
  canonical.resize(static_cast<std::size_t>(o.groups));
  ready.assign(static_cast<std::size_t>(all_streams()), false);
  forking.assign(static_cast<std::size_t>(all_streams()), false);
  created_seq.assign(static_cast<std::size_t>(all_streams()), 0);
  ops.emplace_back();
  raft::link_faults base;
  base.drop = o.faults ? 0.01 : 0.0;
  base.reorder = o.faults && sched.chance(0.5);
  each_net([&](raft::mem_network& w) { w.set_all_links(base); });
  for (auto& n : nodes) start_node(*n);
  clients.resize(static_cast<std::size_t>(o.clients));
  for (int i = 0; i < o.clients; ++i) {
    client& c = clients[static_cast<std::size_t>(i)];
    c.id = i;
    c.home = i % o.streams;
    c.producer_id = fmt::format("p{}", i);
    schedule_client(c, 0, 50);
  }
  if (o.faults) schedule_chaos();

  while (report.ok && sched.now_ms() < o.fault_phase_ms && sched.run_one()) {
  }

  // Recovery: heal, reliable links, restart every node (a full replay of its log), finish every client.
  recovering = true;
  const std::int64_t recovery_start = sched.now_ms();
  note("faults stop: recovery");
  each_net([](raft::mem_network& w) {
    w.heal();
    w.set_all_links(raft::link_faults{});
  });
  for (auto& n : nodes) {
    if (!report.ok) break;
    stop_node(*n, false);
    start_node(*n);
  }
  probe_quiet();  // every client not waiting for an answer has its next step queued already
  const std::int64_t limit = sched.now_ms() + o.recovery_limit_ms;
  while (report.ok && !quiet && sched.now_ms() < limit && sched.run_one()) {
  }
  if (report.ok && !quiet) {
    std::string why;
    for (const auto& c : clients)
      if (!c.done) why += fmt::format(" client {} not done (busy {}, op {});", c.id, c.busy, c.again);
    for (const auto& n : nodes) {
      if (!n->up) {
        why += fmt::format(" n{} down;", n->id);
        continue;
      }
      for (const auto& g : n->status())
        why += fmt::format(" n{} g{}: {} term {} leader {} commit {} applied {} last {};", n->id, g.group,
                           g.role, g.term, g.leader, g.commit_index, g.applied_index, g.last_index);
    }
    fail("no quiet after recovery:" + why);
  }
  report.recovery_ms = sched.now_ms() - recovery_start;
  if (report.ok) check_final();
  if (report.ok && o.lose_releases) release_phase();
  report.tasks = sched.tasks_run();
  for (const auto& n : nodes) {
    if (!n->up) continue;
    // Every leadership this incarnation won and did not lose is one it holds: the replicator saw every
    // change of role (node_io's after-event hook runs after every tick and message).
    for (const replicator* r : n->replicators()) {
      std::uint64_t leads = 0;
      for (const auto& g : r->status()) leads += std::string_view(g.role) == "leader" ? 1 : 0;
      const leadership_counts& lc = r->leadership();
      if (report.ok && lc.leaderships_won - lc.leaderships_lost != leads) {
        fail(fmt::format("node {} lane {} counted {} leaderships won and {} lost, and leads {} groups", n->id,
                         r->lane(), lc.leaderships_won, lc.leaderships_lost, leads));
      }
      count_leadership(*r);
      report.snapshots_taken += r->snapshots_taken();
      report.snapshots_deferred += r->snapshots_deferred();
    }
    if (n->sweep) report.releases_recovered += n->sweep->stats().recovered;
  }
  for (auto& n : nodes) {
    n->up = false;
    if (n->ex) n->ex->halt();
    n->more.clear();
    n->repl.reset();
    n->waits.reset();
    n->more_links.clear();
    n->links.reset();
    n->ex.reset();
  }
  return report;
}

sim_report run_cluster_sim(const sim_options& o) {
  cluster c(o);
  return c.run();
}

}  // namespace weir::cluster::sim

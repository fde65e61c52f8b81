// The lane simulation's clients (lane_sim.h): creates, plain and producer appends, forks made as the
// server makes them, and reads through random nodes, every one through the production raft lane and
// partition of the node it picks.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "unit/cluster/lane_sim_model.h"

namespace weir::cluster::sim {

using std::chrono::milliseconds;

namespace {
constexpr const char* content_type = "application/octet-stream";
}  // namespace

op& lane_sim::new_op(sim_client& c, op_kind kind, int stream) {
  op& p = ops_.emplace_back();
  p.id = ops_.size() - 1;
  p.kind = kind;
  p.client = c.id;
  p.stream = stream;
  const std::int64_t now = clock_.wall_ms();
  if (kind == op_kind::create) {
    streams::create_command cc;
    cc.path = path_of(stream);
    cc.content_type = content_type;
    cc.now_ms = now;
    p.command = std::move(cc);
    c.again = p.id;
  } else if (kind == op_kind::fork) {
    // Step 1, in the source's group; the create follows once it is answered (end_write).
    streams::fork_retain_command r;
    r.source = path_of(source_of(stream));
    r.now_ms = now;
    r.fork = path_of(stream);  // as a cluster's retains name their fork (what the fork sweep looks for)
    p.command = std::move(r);
    forking_[static_cast<std::size_t>(stream)] = true;
    c.again = p.id;
  } else if (kind != op_kind::read) {
    streams::append_command ac;
    ac.path = path_of(stream);
    ac.content_type = content_type;
    // A unique token, padded so that the streams outgrow the hot tier many times over.
    ac.body.bytes = streams::make_chunk(
        fmt::format("[{}:{}]", p.id, std::string(static_cast<std::size_t>(sched_.uniform(10, 300)), 'x')));
    ac.now_ms = now;
    if (kind == op_kind::producer) {
      // Now and then the producer restarts with a new epoch (which must begin at seq 0).
      if (c.next_seq > 0 && sched_.chance(0.05)) {
        ++c.epoch;
        c.next_seq = 0;
      }
      ac.producer = streams::producer_ref{c.producer_id, c.epoch, c.next_seq++};
      c.again = p.id;
      c.producer_ops.push_back(p.id);
    }
    p.command = std::move(ac);
  }
  return p;
}

void lane_sim::schedule_client(sim_client& c, std::int64_t lo, std::int64_t hi) {
  sched_.at(milliseconds(sched_.uniform(lo, hi)), [this, &c] { client_step(c); });
}

void lane_sim::client_step(sim_client& c) {
  if (!report_.ok || c.busy || c.done) return;
  std::uint64_t id = c.again;
  if (id == 0) {
    if (recovering_) {
      if (c.final_ops == 2) {
        c.done = true;
        note("client {} done", c.id);
        return;
      }
      // One append to a stream of its own (its group gets a new command), then one read.
      const int s = c.id % o_.streams;
      if (!ready_[static_cast<std::size_t>(s)]) {
        id = new_op(c, op_kind::create, s).id;
      } else {
        ++c.final_ops;
        id = new_op(c, c.final_ops == 1 ? op_kind::plain : op_kind::read, s).id;
      }
    } else if (c.read_next >= 0) {
      id = new_op(c, op_kind::read, c.read_next).id;
      c.read_next = -1;
    } else {
      const auto pick = sched_.uniform(0, 99);
      int s = pick < 35 ? c.home : static_cast<int>(sched_.uniform(0, o_.streams - 1));
      if (pick >= 35 && o_.forks > 0 && sched_.chance(0.1))
        s = o_.streams + static_cast<int>(sched_.uniform(0, o_.forks - 1));
      op_kind k = pick < 35 ? op_kind::producer : pick < 65 ? op_kind::plain : op_kind::read;
      if (is_fork(s)) {
        // Forks are made once and only read (their content is their source's prefix).
        const auto f = static_cast<std::size_t>(s);
        const bool can_fork = !forking_[f] && ready_[static_cast<std::size_t>(source_of(s))];
        k = can_fork && k != op_kind::read ? op_kind::fork : op_kind::read;
      } else if (!ready_[static_cast<std::size_t>(s)] && k != op_kind::read) {
        k = op_kind::create;
      }
      id = new_op(c, k, s).id;
    }
  }
  sim_node& n = *nodes_[static_cast<std::size_t>(sched_.uniform(0, o_.nodes - 1))];
  start_attempt(c, ops_[id], n);
}

void lane_sim::start_attempt(sim_client& c, op& p, sim_node& n) {
  if (!n.up) {  // connection refused: nothing was sent
    schedule_client(c, 5, 50);
    return;
  }
  c.busy = true;
  attempt a;
  a.op = p.id;
  a.epoch = epoch_;
  a.minority = !reaches_majority(n);
  a.start_seq = ++events_;
  if (p.attempts++ == 0) {
    p.start_seq = a.start_seq;
    p.start_ms = sched_.now_ms();
  }
  const std::uint64_t serial = n.next_serial++;
  n.waiting.emplace(serial, a);
  // The answer, unless the node went down first (stop_node ended the attempt then).
  auto take = [this, &n, serial, inc = n.incarnation]() -> std::optional<attempt> {
    if (!n.up || n.incarnation != inc) return std::nullopt;
    auto it = n.waiting.find(serial);
    if (it == n.waiting.end()) {
      fail(fmt::format("node {}: attempt {} answered twice", n.id, serial));
      return std::nullopt;
    }
    attempt done = it->second;
    n.waiting.erase(it);
    return done;
  };
  if (p.kind == op_kind::read) {
    const std::string path = path_of(p.stream);
    // raft_lane::linearize: a read index, then (a fork) its sources' groups up to their retains.
    // Then the partition's read, which may wait for the bucket (the attempt stays the node's meanwhile).
    n.lane(path).linearize(std::string_view(path), [this, &n, take, stream = p.stream](bool ok) {
      if (!ok) {
        if (auto got = take()) end_read(*got, n, ending::unknown);
        return;
      }
      read_stream(n, stream, [this, &n, take](bool served, final_read& content) {
        if (auto got = take()) end_read(*got, n, served ? ending::answered : ending::unknown, &content);
      });
    });
    return;
  }
  ++report_.submits;
  // Its stream's lane (a fork's retain: the source's).
  const std::string path(streams::command_path(p.command));
  (void)n.lane(path).submit(p.command, [this, take](replica::durable_result& r) {
    auto got = take();
    if (!got) return;
    if (r.failure == replica::errc::ok) return end_write(*got, ending::answered, &r.o);
    end_write(*got, r.failure == replica::errc::cluster_unavailable ? ending::no_leader : ending::unknown,
              nullptr);
  });
}

void lane_sim::end_write(const attempt& a, ending e, const streams::outcome* out) {
  op& p = ops_[a.op];
  sim_client& c = clients_[static_cast<std::size_t>(p.client)];
  c.busy = false;
  if (a.minority && a.epoch == epoch_) {
    ++report_.minority_checks;
    if (e == ending::answered)
      fail(fmt::format("op {} acknowledged by a node that could not reach a majority since it was sent",
                       p.id));
  }
  switch (e) {
    case ending::answered:
      break;
    case ending::unknown:
      ++report_.failed_unknown;
      break;
    case ending::no_leader:
      ++report_.failed_no_leader;
      p.no_leader = true;
      break;
    case ending::node_lost:
      ++report_.lost_with_node;
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
    // The retain is applied on this node: the fork's create, with the retain's resolution, as the
    // server builds it (stream_shard::create_fork), sent again until answered.
    if (!out->resolution || !out->resolution->origin)
      return fail(fmt::format("fork op {}: its retain was answered without a resolution or origin", p.id));
    streams::create_command cc;
    cc.path = path_of(p.stream);
    cc.now_ms = clock_.wall_ms();
    streams::fork_spec f;
    f.source = path_of(source_of(p.stream));
    f.resolved = *out->resolution;
    f.resolved.retained = true;
    cc.fork = std::move(f);
    note("fork op {}: retain of stream {} applied at group {} index {}, point {}", p.id, source_of(p.stream),
         out->resolution->origin->group, out->resolution->origin->index, out->resolution->point.value());
    p.command = std::move(cc);
    p.stage = 1;
    schedule_client(c, 0, 10);
    return;
  }
  if (p.ack_seq == 0) {
    p.ack_seq = ++events_;
    p.ack_ms = sched_.now_ms();
  }
  if (c.again == p.id) c.again = 0;
  if (p.kind == op_kind::create || p.kind == op_kind::fork) {
    if (!ready_[static_cast<std::size_t>(p.stream)])
      created_seq_[static_cast<std::size_t>(p.stream)] = p.ack_seq;
    ready_[static_cast<std::size_t>(p.stream)] = true;
    if (p.kind == op_kind::fork) {
      ++report_.forks;
      c.read_next = p.stream;
    }
  } else {
    ++report_.acked;
    if (p.kind == op_kind::producer) ++report_.producer_acked;
    if (out->duplicate) ++report_.duplicates;
  }
  schedule_client(c, 0, 30);
}

void lane_sim::end_read(const attempt& a, sim_node& n, ending e, final_read* got) {
  op& p = ops_[a.op];
  sim_client& c = clients_[static_cast<std::size_t>(p.client)];
  c.busy = false;
  if (a.minority && a.epoch == epoch_) {
    ++report_.minority_checks;
    if (e == ending::answered)
      fail(fmt::format("read op {} served by node {}, which could not reach a majority since it began", p.id,
                       n.id));
  }
  if (e == ending::node_lost) {
    ++report_.lost_with_node;
  } else if (e != ending::answered) {
    ++report_.reads_refused;
  } else {
    ++report_.reads;
    if (is_fork(p.stream)) ++report_.fork_reads;
    read_record r;
    r.op = p.id;
    r.stream = p.stream;
    r.node = n.id;
    r.start_seq = a.start_seq;
    r.end_seq = ++events_;
    r.start_ms = p.start_ms;
    r.end_ms = sched_.now_ms();
    r.exists = got->exists;
    r.content = std::move(got->content);
    reads_.push_back(std::move(r));
  }
  schedule_client(c, 0, 30);
}

// One whole-stream read of a node's partition, across the reads of the bucket it waits for.
struct lane_sim::stream_read {
  std::string path;
  int incarnation = 0;
  std::optional<streams::stream_offset> from = streams::stream_offset(0);
  final_read out;
  read_fn done;
};

void lane_sim::read_stream(sim_node& n, int stream, read_fn done) {
  auto r = std::make_shared<stream_read>();
  r->path = path_of(stream);
  r->incarnation = n.incarnation;
  r->done = std::move(done);
  if (n.part(r->path).head_visible(r->path).code != streams::errc::ok) return r->done(true, r->out);
  r->out.exists = true;
  read_more(n, std::move(r));
}

void lane_sim::read_more(sim_node& n, std::shared_ptr<stream_read> r) {
  replica::partition& part = n.part(r->path);
  const std::string& path = r->path;
  for (;;) {
    status io;
    streams::read_result rr = part.read_visible(path, r->from, std::size_t(1) << 20, &io);
    if (!io) return fail(fmt::format("node {}: reading {} failed: {}", n.id, path, io.err().reason));
    if (rr.code != streams::errc::ok) {
      return fail(fmt::format("node {}: {} exists but cannot be read (code {})", n.id, path,
                              static_cast<int>(rr.code)));
    }
    if (rr.plan.in_objects) {
      // Bytes this node forgot: from the bucket, through the node's fetcher, answered later.
      (void)part.read_cold(
          path, std::move(rr),
          [this, &n, r](streams::read_result& got, status fetched) {
            if (!n.up || n.incarnation != r->incarnation) return;
            if (!fetched) {
              // A store fault (the only way the bucket fails here): the server answers 503.
              if (o_.cold_store_faults <= 0)
                return fail(fmt::format("node {}: reading {} from the bucket failed: {}", n.id, r->path,
                                        fetched.err().reason));
              return r->done(false, r->out);
            }
            if (got.code != streams::errc::ok)
              return fail(fmt::format("node {}: {} went away during a read from the bucket (code {})", n.id,
                                      r->path, static_cast<int>(got.code)));
            if (got.plan.bytes == 0)
              return fail(fmt::format("node {}: a read of {} from the bucket at {} returned nothing", n.id,
                                      r->path, r->from ? r->from->value() : 0));
            for (const auto& slice : got.plan.slices) r->out.content += slice.view();
            r->from = got.plan.next;
            read_more(n, r);
          },
          false);
      return;
    }
    for (const auto& slice : rr.plan.slices) r->out.content += slice.view();
    if (rr.plan.bytes == 0 || rr.plan.up_to_date) break;
    r->from = rr.plan.next;
  }
  const streams::read_result head = part.head_visible(path);
  if (head.code != streams::errc::ok)
    return fail(fmt::format("node {}: {} went away during a read", n.id, path));
  r->out.generation = head.meta->generation;
  r->out.tail = head.meta->tail.value();
  r->done(true, r->out);
}

}  // namespace weir::cluster::sim

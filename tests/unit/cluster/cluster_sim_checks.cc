// The checks at the end of a cluster simulation run (cluster_sim.h lists them): every node applied the
// committed entries and holds the same state; acknowledged appends are there once each; producers are
// exactly-once and in order; appends keep their real-time order; forks hold their source's prefix; reads
// were linearizable.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cluster_sim_model.h"

namespace weir::cluster::sim {

void cluster::check_final() {
  // 1. Every node applied exactly the committed entries, and holds the same state.
  for (int g = 0; g < o.groups; ++g) {
    std::vector<std::uint64_t> want;
    for (const auto& [index, cmd] : canonical[static_cast<std::size_t>(g)]) want.push_back(index);
    report.final_entries += want.size();
    for (const auto& n : nodes) {
      const auto& have = n->applied[static_cast<std::size_t>(g)];
      if (have != want)
        return fail(
            fmt::format("group {}: node {} replayed {} commands (last index {}), {} were committed (last "
                        "index {})",
                        g, n->id, have.size(), have.empty() ? 0 : have.back(), want.size(),
                        want.empty() ? 0 : want.back()));
    }
  }
  // The next generation is whatever the last command applied set: groups interleave differently on
  // each node. Everything else must match byte for byte.
  for (const auto& n : nodes) n->sm->set_next_generation(0);
  const auto snap = nodes[0]->sm->snapshot();
  for (const auto& n : nodes)
    if (n->sm->snapshot() != snap)
      return fail(fmt::format("node {}'s state machine differs from node {}'s", n->id, nodes[0]->id));

  std::vector<std::map<std::uint64_t, std::size_t>> pos(static_cast<std::size_t>(o.streams));  // op -> place
  std::vector<std::string> finals(static_cast<std::size_t>(o.streams));
  for (int s = 0; s < o.streams; ++s) {
    std::string content;
    const bool exists = read_stream(*nodes[0]->sm, s, content);
    for (const auto& n : nodes) {
      std::string other;
      if (read_stream(*n->sm, s, other) != exists || other != content)
        return fail(
            fmt::format("stream {}: node {} and node {} hold different content", s, n->id, nodes[0]->id));
      auto a = n->sm->head(path_of(s), 0), b = nodes[0]->sm->head(path_of(s), 0);
      if (a.meta.has_value() != b.meta.has_value() ||
          (a.meta && (a.meta->generation != b.meta->generation || a.meta->tail != b.meta->tail)))
        return fail(fmt::format("stream {}: node {} and node {} disagree on generation or tail", s, n->id,
                                nodes[0]->id));
    }
    if (exists != ready[static_cast<std::size_t>(s)])
      return fail(fmt::format("stream {}: exists {} at the end, but its create was {}acknowledged", s, exists,
                              ready[static_cast<std::size_t>(s)] ? "" : "never "));
    // 2. Every token once, from an append to this stream.
    auto& where = pos[static_cast<std::size_t>(s)];
    std::size_t k = 0;
    for (std::size_t at = 0; at < content.size();) {
      const std::size_t end = content.find(']', at);
      std::uint64_t id = 0;
      if (content[at] != '[' || end == std::string::npos ||
          std::from_chars(content.data() + at + 1, content.data() + end, id).ptr != content.data() + end)
        return fail(fmt::format("stream {}: unparsable content at byte {}", s, at));
      at = end + 1;
      if (id == 0 || id >= ops.size() || ops[id].stream != s ||
          (ops[id].kind != op_kind::plain && ops[id].kind != op_kind::producer))
        return fail(fmt::format("stream {}: holds token {} that no append to it carried", s, id));
      if (!where.emplace(id, k++).second)
        return fail(fmt::format("stream {}: append op {} ({}) is in it twice", s, id,
                                ops[id].kind == op_kind::producer ? "producer" : "plain"));
    }
    finals[static_cast<std::size_t>(s)] = std::move(content);
  }
  for (const op& p : ops) {
    if (p.id == 0 || (p.kind != op_kind::plain && p.kind != op_kind::producer)) continue;
    const auto& where = pos[static_cast<std::size_t>(p.stream)];
    const bool in = where.contains(p.id);
    if (p.ack_seq != 0 && !in)
      return fail(fmt::format("op {} (client {}, stream {}) acknowledged at t={}ms, missing at the end", p.id,
                              p.client, p.stream, p.ack_ms));
    if (p.kind == op_kind::plain && p.no_leader && in)
      return fail(fmt::format("op {} failed with no_leader, yet is in stream {}", p.id, p.stream));
  }
  // 3. Producers: every append acknowledged, in the stream once (above), in the order it was made.
  for (const auto& c : clients) {
    std::size_t last = 0;
    bool first = true;
    for (std::uint64_t id : c.producer_ops) {
      const op& p = ops[id];
      if (p.ack_seq == 0)
        return fail(fmt::format("producer op {} of client {} never acknowledged", id, c.id));
      const std::size_t at = pos[static_cast<std::size_t>(p.stream)].at(id);
      if (!first && at <= last)
        return fail(fmt::format("client {}: producer op {} is before an earlier one in stream {}", c.id, id,
                                p.stream));
      last = at;
      first = false;
    }
  }
  // 4. Real-time order of appends: one acknowledged before another began comes first.
  for (int s = 0; s < o.streams; ++s) {
    std::vector<std::uint64_t> order(pos[static_cast<std::size_t>(s)].size());
    for (const auto& [id, at] : pos[static_cast<std::size_t>(s)]) order[at] = id;
    std::uint64_t min_ack = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t min_op = 0;
    for (std::size_t i = order.size(); i-- > 0;) {
      const op& p = ops[order[i]];
      if (min_ack < p.start_seq)
        return fail(fmt::format("stream {}: op {} was acknowledged before op {} began, yet comes after it", s,
                                min_op, p.id));
      if (p.ack_seq != 0 && p.ack_seq < min_ack) {
        min_ack = p.ack_seq;
        min_op = p.id;
      }
    }
  }
  if (!check_forks(finals)) return;
  check_reads(pos, finals);
}

// Forks: the same on every node, existing exactly when their create was acknowledged, each holding its
// source's first bytes (the fork point's); every read of one returned exactly that.
bool cluster::check_forks(const std::vector<std::string>& finals) {
  std::vector<std::string> forks(static_cast<std::size_t>(o.forks));  // final content, by fork number
  for (int f = o.streams; f < all_streams(); ++f) {
    std::string content;
    const bool exists = read_stream(*nodes[0]->sm, f, content);
    for (const auto& n : nodes) {
      std::string other;
      if (read_stream(*n->sm, f, other) != exists || other != content) {
        fail(fmt::format("fork {}: node {} and node {} hold different content", f, n->id, nodes[0]->id));
        return false;
      }
    }
    if (exists != ready[static_cast<std::size_t>(f)]) {
      fail(fmt::format("fork {}: exists {} at the end, but its create was {}acknowledged", f, exists,
                       ready[static_cast<std::size_t>(f)] ? "" : "never "));
      return false;
    }
    const int from = source_of(f);
    const std::string& source = is_fork(from) ? forks[static_cast<std::size_t>(from - o.streams)]
                                              : finals[static_cast<std::size_t>(from)];
    forks[static_cast<std::size_t>(f - o.streams)] = content;
    if (source.compare(0, content.size(), content) != 0) {
      fail(fmt::format("fork {}: its {} bytes are not a prefix of its source {}'s {}", f, content.size(),
                       source_of(f), source.size()));
      return false;
    }
    for (const read_record& r : reads) {
      if (r.stream != f) continue;
      const std::string where = fmt::format("read op {} of fork {} (of stream {}) on node {} (t={}..{}ms)",
                                            r.op, f, source_of(f), r.node, r.start_ms, r.end_ms);
      if (!r.exists) {
        if (created_seq[static_cast<std::size_t>(f)] != 0 &&
            created_seq[static_cast<std::size_t>(f)] < r.start_seq) {
          fail(where + ": no such stream, though its create was acknowledged before");
          return false;
        }
        continue;
      }
      if (r.content != content) {
        fail(where + fmt::format(": saw {} bytes, the fork holds {} (its source's prefix)", r.content.size(),
                                 content.size()));
        return false;
      }
    }
  }
  return true;
}

void cluster::check_reads(const std::vector<std::map<std::uint64_t, std::size_t>>& pos,
                          const std::vector<std::string>& finals) {
  std::vector<std::vector<const read_record*>> by_stream(static_cast<std::size_t>(all_streams()));
  for (const auto& r : reads) by_stream[static_cast<std::size_t>(r.stream)].push_back(&r);
  for (int s = 0; s < o.streams; ++s) {
    const auto& where = pos[static_cast<std::size_t>(s)];
    const std::string& final_content = finals[static_cast<std::size_t>(s)];
    // Acknowledged appends of this stream by when they were acknowledged, with their places.
    std::vector<std::pair<std::uint64_t, std::size_t>> acks;
    for (const auto& [id, at] : where)
      if (ops[id].ack_seq != 0) acks.emplace_back(ops[id].ack_seq, at);
    std::sort(acks.begin(), acks.end());
    for (const read_record* r : by_stream[static_cast<std::size_t>(s)]) {
      auto where_read = [&] {
        return fmt::format("read op {} of stream {} on node {} (t={}..{}ms)", r->op, s, r->node, r->start_ms,
                           r->end_ms);
      };
      if (!r->exists) {
        if (created_seq[static_cast<std::size_t>(s)] != 0 &&
            created_seq[static_cast<std::size_t>(s)] < r->start_seq)
          return fail(where_read() + ": no such stream, though its create was acknowledged before");
        continue;
      }
      if (final_content.compare(0, r->content.size(), r->content) != 0)
        return fail(where_read() + fmt::format(": its {} bytes are not a prefix of the final {} bytes",
                                               r->content.size(), final_content.size()));
      const std::size_t seen =
          static_cast<std::size_t>(std::count(r->content.begin(), r->content.end(), ']'));
      for (const auto& [ack, at] : acks) {
        if (ack >= r->start_seq) break;
        if (at >= seen)
          return fail(where_read() +
                      fmt::format(": misses the append at place {} (acknowledged before it began; "
                                  "it saw {} appends)",
                                  at, seen));
      }
      for (const auto& [id, at] : where)
        if (at < seen && ops[id].start_seq > r->end_seq)
          return fail(where_read() + fmt::format(": saw op {}, which began after it ended", id));
    }
    // Monotonic: a read that began after another ended saw at least as much.
    auto reads_s = by_stream[static_cast<std::size_t>(s)];
    auto len = [](const read_record* r) {
      return r->exists ? static_cast<std::int64_t>(r->content.size()) : std::int64_t(-1);
    };
    std::vector<const read_record*> by_end = reads_s;
    std::sort(by_end.begin(), by_end.end(), [](auto* a, auto* b) { return a->end_seq < b->end_seq; });
    std::sort(reads_s.begin(), reads_s.end(), [](auto* a, auto* b) { return a->start_seq < b->start_seq; });
    std::size_t j = 0;
    const read_record* longest = nullptr;
    for (const read_record* r : reads_s) {
      while (j < by_end.size() && by_end[j]->end_seq < r->start_seq) {
        if (longest == nullptr || len(by_end[j]) > len(longest)) longest = by_end[j];
        ++j;
      }
      if (longest != nullptr && len(r) < len(longest))
        return fail(
            fmt::format("stream {}: read op {} on node {} (t={}ms) saw {} bytes; read op {} on node {} "
                        "ended before it (t={}ms) and saw {}",
                        s, r->op, r->node, r->start_ms, len(r), longest->op, longest->node, longest->end_ms,
                        len(longest)));
    }
  }
}

}  // namespace weir::cluster::sim

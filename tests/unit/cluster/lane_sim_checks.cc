// The checks at the end of a lane simulation run (lane_sim.h lists them): every node holds the same
// streams; acknowledged appends are there once each; producers are exactly-once and in order; appends
// keep their real-time order; forks hold their source's prefix; reads were linearizable.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "unit/cluster/lane_sim_model.h"

namespace weir::cluster::sim {

using std::chrono::milliseconds;

// Every node reads every stream through its partition once it applied everything committed in the
// stream's group (and, a fork, its sources' groups up to their retains) before the read: raft_lane's
// linearize, as a client's read.
void lane_sim::final_reads() {
  finals_.assign(nodes_.size(),
                 std::vector<std::optional<final_read>>(static_cast<std::size_t>(all_streams())));
  std::size_t left = nodes_.size() * static_cast<std::size_t>(all_streams());
  std::function<void(std::size_t, int)> read = [this, &read, &left](std::size_t k, int s) {
    sim_node& n = *nodes_[k];
    const std::string path = path_of(s);
    n.lane(path).linearize(std::string_view(path), [this, &read, &left, &n, k, s](bool ok) {
      if (!ok) {
        note("node {}: no read index for stream {} yet", n.id, s);
        return (void)sched_.at(milliseconds(50), [&read, k, s] { read(k, s); });
      }
      read_stream(n, s, [this, &read, &left, k, s](bool served, final_read& got) {
        if (!served) return (void)sched_.at(milliseconds(50), [&read, k, s] { read(k, s); });
        finals_[k][static_cast<std::size_t>(s)] = std::move(got);
        --left;
      });
    });
  };
  for (std::size_t k = 0; k < nodes_.size(); ++k)
    for (int s = 0; s < all_streams(); ++s) read(k, s);
  const std::int64_t limit = sched_.now_ms() + 10000;
  while (report_.ok && left > 0 && sched_.now_ms() < limit && sched_.run_one()) {
  }
  if (report_.ok && left > 0) fail(fmt::format("{} final reads not served within 10 s", left));
  // Every record applied reached the data log: once its queue went to the writer (at each tick, every
  // 250 ms here, or at 64 KiB) and the writes completed, no record is held in memory without a place on
  // disk (the hot tier may drop each of them).
  const std::int64_t settle = sched_.now_ms() + 600;
  while (report_.ok && sched_.now_ms() < settle && sched_.run_one()) {
  }
  for (const auto& n : nodes_) {
    for (const auto& part : n->parts) {
      std::size_t unlocated = 0;
      std::string first;
      part->machine().for_each_unlocated([&](std::string_view path, std::uint64_t, const streams::record& r) {
        if (unlocated++ == 0) first = fmt::format("{} up to {}", path, r.end);
      });
      if (report_.ok && unlocated > 0)
        fail(fmt::format("node {} lane {}: {} records never reached the data log (the first: {})", n->id,
                         part->options().core, unlocated, first));
    }
  }
}

void lane_sim::check_final() {
  // 1. Every node holds the same streams (forks included), the same bytes, generation and tail.
  for (int s = 0; s < all_streams(); ++s) {
    const auto si = static_cast<std::size_t>(s);
    const final_read& first = *finals_[0][si];
    for (std::size_t k = 1; k < nodes_.size(); ++k) {
      const final_read& other = *finals_[k][si];
      if (other.exists != first.exists || other.content != first.content)
        return fail(fmt::format("stream {}: node {} holds {} bytes (exists {}), node 1 {} (exists {})", s,
                                k + 1, other.content.size(), other.exists, first.content.size(),
                                first.exists));
      if (other.generation != first.generation || other.tail != first.tail)
        return fail(fmt::format("stream {}: node {} has generation {} and tail {}, node 1 {} and {}", s,
                                k + 1, other.generation, other.tail, first.generation, first.tail));
    }
    if (first.exists != ready_[si])
      return fail(fmt::format("stream {}: exists {} at the end, but its create was {}acknowledged", s,
                              first.exists, ready_[si] ? "" : "never "));
  }
  std::vector<std::map<std::uint64_t, std::size_t>> pos(static_cast<std::size_t>(o_.streams));  // op -> place
  std::vector<std::string> finals(static_cast<std::size_t>(o_.streams));
  for (int s = 0; s < o_.streams; ++s) {
    const std::string& content = finals_[0][static_cast<std::size_t>(s)]->content;
    // 2. Every token once, from an append to this stream.
    auto& where = pos[static_cast<std::size_t>(s)];
    std::size_t k = 0;
    for (std::size_t at = 0; at < content.size();) {
      const std::size_t colon = content.find(':', at);
      const std::size_t end = content.find(']', at);
      std::uint64_t id = 0;
      if (content[at] != '[' || end == std::string::npos || colon == std::string::npos || colon > end ||
          std::from_chars(content.data() + at + 1, content.data() + colon, id).ptr != content.data() + colon)
        return fail(fmt::format("stream {}: unparsable content at byte {}", s, at));
      at = end + 1;
      if (id == 0 || id >= ops_.size() || ops_[id].stream != s ||
          (ops_[id].kind != op_kind::plain && ops_[id].kind != op_kind::producer))
        return fail(fmt::format("stream {}: holds token {} that no append to it carried", s, id));
      if (!where.emplace(id, k++).second)
        return fail(fmt::format("stream {}: append op {} ({}) is in it twice", s, id,
                                ops_[id].kind == op_kind::producer ? "producer" : "plain"));
    }
    finals[static_cast<std::size_t>(s)] = content;
  }
  for (const op& p : ops_) {
    if (p.id == 0 || (p.kind != op_kind::plain && p.kind != op_kind::producer)) continue;
    const auto& where = pos[static_cast<std::size_t>(p.stream)];
    const bool in = where.contains(p.id);
    if (p.ack_seq != 0 && !in)
      return fail(fmt::format("op {} (client {}, stream {}) acknowledged at t={}ms, missing at the end", p.id,
                              p.client, p.stream, p.ack_ms));
    if (p.kind == op_kind::plain && p.no_leader && in)
      return fail(fmt::format("op {} failed with cluster_unavailable, yet is in stream {}", p.id, p.stream));
  }
  // 3. Producers: every append acknowledged, in the stream once (above), in the order it was made.
  for (const auto& c : clients_) {
    std::size_t last = 0;
    bool first = true;
    for (std::uint64_t id : c.producer_ops) {
      const op& p = ops_[id];
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
  for (int s = 0; s < o_.streams; ++s) {
    std::vector<std::uint64_t> order(pos[static_cast<std::size_t>(s)].size());
    for (const auto& [id, at] : pos[static_cast<std::size_t>(s)]) order[at] = id;
    std::uint64_t min_ack = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t min_op = 0;
    for (std::size_t i = order.size(); i-- > 0;) {
      const op& p = ops_[order[i]];
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

// Forks: each holding its source's first bytes (the fork point's); every read of one returned exactly
// that, and found it once its create was acknowledged before the read began.
bool lane_sim::check_forks(const std::vector<std::string>& finals) {
  for (int f = o_.streams; f < all_streams(); ++f) {
    const std::string& content = finals_[0][static_cast<std::size_t>(f)]->content;
    const int from = source_of(f);
    const std::string& source = is_fork(from) ? finals_[0][static_cast<std::size_t>(from)]->content
                                              : finals[static_cast<std::size_t>(from)];
    if (source.compare(0, content.size(), content) != 0) {
      fail(fmt::format("fork {}: its {} bytes are not a prefix of its source {}'s {}", f, content.size(),
                       from, source.size()));
      return false;
    }
    for (const read_record& r : reads_) {
      if (r.stream != f) continue;
      const std::string where = fmt::format("read op {} of fork {} (of stream {}) on node {} (t={}..{}ms)",
                                            r.op, f, from, r.node, r.start_ms, r.end_ms);
      if (!r.exists) {
        if (created_seq_[static_cast<std::size_t>(f)] != 0 &&
            created_seq_[static_cast<std::size_t>(f)] < r.start_seq) {
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

void lane_sim::check_reads(const std::vector<std::map<std::uint64_t, std::size_t>>& pos,
                           const std::vector<std::string>& finals) {
  std::vector<std::vector<const read_record*>> by_stream(static_cast<std::size_t>(all_streams()));
  for (const auto& r : reads_) by_stream[static_cast<std::size_t>(r.stream)].push_back(&r);
  for (int s = 0; s < o_.streams; ++s) {
    const auto& where = pos[static_cast<std::size_t>(s)];
    const std::string& final_content = finals[static_cast<std::size_t>(s)];
    // Acknowledged appends of this stream by when they were acknowledged, with their places.
    std::vector<std::pair<std::uint64_t, std::size_t>> acks;
    for (const auto& [id, at] : where)
      if (ops_[id].ack_seq != 0) acks.emplace_back(ops_[id].ack_seq, at);
    std::sort(acks.begin(), acks.end());
    for (const read_record* r : by_stream[static_cast<std::size_t>(s)]) {
      auto where_read = [&] {
        return fmt::format("read op {} of stream {} on node {} (t={}..{}ms)", r->op, s, r->node, r->start_ms,
                           r->end_ms);
      };
      if (!r->exists) {
        if (created_seq_[static_cast<std::size_t>(s)] != 0 &&
            created_seq_[static_cast<std::size_t>(s)] < r->start_seq)
          return fail(where_read() + ": no such stream, though its create was acknowledged before");
        continue;
      }
      if (final_content.compare(0, r->content.size(), r->content) != 0)
        return fail(where_read() + fmt::format(": its {} bytes are not a prefix of the final {} bytes",
                                               r->content.size(), final_content.size()));
      const auto seen = static_cast<std::size_t>(std::count(r->content.begin(), r->content.end(), ']'));
      for (const auto& [ack, at] : acks) {
        if (ack >= r->start_seq) break;
        if (at >= seen)
          return fail(where_read() +
                      fmt::format(": misses the append at place {} (acknowledged before it began; "
                                  "it saw {} appends)",
                                  at, seen));
      }
      for (const auto& [id, at] : where)
        if (at < seen && ops_[id].start_seq > r->end_seq)
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

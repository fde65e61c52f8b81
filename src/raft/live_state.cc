#include "raft/live_state.h"

#include <fmt/format.h>

#include "raft/byte_codec.h"

namespace weir::raft {
namespace {

std::vector<std::byte> copy_of(std::span<const std::byte> b) {
  return {b.begin(), b.end()};
}

stored_snapshot stored_of(const record::snapshot& r) {
  std::vector<std::byte> conf;
  byte_writer w(conf);
  wire::encode_servers(r.conf, w);
  return stored_snapshot{r.index, r.term, r.conf_index, std::move(conf), copy_of(r.data)};
}

// First index a snapshot with `trailing` entries kept leaves in the log (0: nothing dropped).
std::uint64_t keep_from(const record::snapshot& r) {
  return r.index.value() > r.trailing ? r.index.value() - r.trailing + 1 : 0;
}

// Splits `r` at index `at` (inside it): returns the part below, leaves the rest in `r`.
entry_run split(entry_run& r, log_index at) {
  const std::uint64_t low = at.value() - r.first.value();
  entry_run lo = r;
  lo.count = low;
  lo.bytes = r.count == 0 ? 0 : r.bytes * low / r.count;
  r.first = at;
  r.count -= low;
  r.bytes -= lo.bytes;
  return lo;
}

}  // namespace

std::uint64_t entry_bytes(std::size_t data_size) {
  return 8 + 1 + 4 + data_size;
}

// ---- live_group ----

void live_group::cut_from(log_index i) {
  while (!runs_.empty() && runs_.back().first >= i) {
    run_bytes_ -= runs_.back().bytes;
    runs_.pop_back();
  }
  if (!runs_.empty() && runs_.back().end() > i) {
    entry_run& b = runs_.back();
    const std::uint64_t before = b.bytes;
    b = split(b, i);
    run_bytes_ -= before - b.bytes;
  }
}

void live_group::drop_below(log_index i) {
  while (!runs_.empty() && runs_.front().end() <= i) {
    run_bytes_ -= runs_.front().bytes;
    runs_.pop_front();
  }
  if (!runs_.empty() && runs_.front().first < i) run_bytes_ -= split(runs_.front(), i).bytes;
}

void live_group::push_run(const entry_run& r) {
  if (!runs_.empty() && runs_.back().seg == r.seg && runs_.back().batch == r.batch &&
      runs_.back().end() == r.first) {
    // Appended by the same batch (or found in the same segment): one run.
    runs_.back().count += r.count;
    runs_.back().bytes += r.bytes;
  } else {
    runs_.push_back(r);
  }
  run_bytes_ += r.bytes;
}

void live_group::clear_runs() {
  runs_.clear();
  run_bytes_ = 0;
}

void live_group::place(entry_run r) {
  if (r.count == 0) return;
  // Split the runs around [r.first, r.end()), drop what lies inside, insert r.
  std::deque<entry_run> out;
  for (entry_run x : runs_) {
    if (x.end() <= r.first || x.first >= r.end()) {
      out.push_back(x);
      continue;
    }
    if (x.first < r.first) out.push_back(split(x, r.first));
    if (x.end() > r.end()) {
      split(x, r.end());
      out.push_back(x);
    }
  }
  auto at = out.begin();
  while (at != out.end() && at->first < r.first) ++at;
  out.insert(at, r);
  runs_ = std::move(out);
  run_bytes_ = 0;
  for (const entry_run& x : runs_) run_bytes_ += x.bytes;
}

void live_group::apply(const record::body& body, std::uint64_t batch) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, record::entries> || std::is_same_v<T, record::carry>) {
          std::uint64_t bytes = items_record_overhead;
          for (const wire::entry& e : r.items) bytes += entry_bytes(e.data.size());
          entry_run run{r.first, r.items.size(), bytes, batch, no_segment};
          if constexpr (std::is_same_v<T, record::entries>) {
            cut_from(r.first);
            push_run(run);
            next_ = run.end();
          } else {
            place(run);
          }
        } else if constexpr (std::is_same_v<T, record::term> || std::is_same_v<T, record::vote>) {
          apply_register(r);
        } else if constexpr (std::is_same_v<T, record::truncate>) {
          cut_from(r.from);
          next_ = r.from;
        } else if constexpr (std::is_same_v<T, record::snapshot>) {
          snapshot_ = stored_of(r);
          trailing_ = r.trailing;
          if (r.trailing == 0) {
            clear_runs();
            next_ = log_index(r.index.value() + 1);
          } else {
            drop_below(log_index(keep_from(r)));
          }
        } else if constexpr (std::is_same_v<T, record::state>) {
          apply_register(r);
        }
      },
      body);
}

void live_group::set_registers(term_id t, node_id v, log_index next, std::optional<stored_snapshot> s,
                               std::uint32_t trailing) {
  term_ = t;
  vote_ = v;
  next_ = next;
  snapshot_ = std::move(s);
  trailing_ = trailing;
}

record::state live_group::state_record(std::vector<wire::server>& conf_scratch) const {
  record::state st{term_, vote_, next_, std::nullopt};
  if (snapshot_) {
    conf_scratch.clear();
    byte_reader r(snapshot_->conf);
    const bool ok = wire::decode_servers(r, conf_scratch);
    WEIR_ASSERT(ok, "node log: a stored snapshot configuration does not decode");
    st.snap = record::snapshot{snapshot_->index, snapshot_->term, snapshot_->conf_index,
                               conf_scratch,     trailing_,       snapshot_->data};
  }
  return st;
}

std::uint64_t live_group::live_bytes() const {
  std::uint64_t n = record::record_header_size + 5 + 25;
  if (snapshot_) n += 24 + 8 + snapshot_->conf.size() + snapshot_->data.size();
  return n + run_bytes_;
}

// ---- recovering_group ----

void group_registers::apply_register(const record::state& r) {
  term_ = r.term;
  vote_ = r.vote;
  next_ = r.next;
  snapshot_.reset();
  if (r.snap) snapshot_ = stored_of(*r.snap);
  trailing_ = r.snap ? r.snap->trailing : 0;
}

void recovering_group::apply(const record::body& body, std::uint32_t seg, std::uint64_t offset) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, record::entries> || std::is_same_v<T, record::carry>) {
          if constexpr (std::is_same_v<T, record::entries>) {
            entries_.erase(entries_.lower_bound(r.first.value()), entries_.end());
            next_ = log_index(r.first.value() + r.items.size());
          }
          std::uint64_t i = r.first.value();
          item_data_offsets at;
          for (const wire::entry& e : r.items) {
            // Segment 0 (a version-1 file) gives no places.
            const std::uint32_t data = at.next(e.data.size());
            const entry_place place = seg == 0 ? entry_place{} : entry_place{seg, offset, data};
            entries_[i++] = located{stored_entry{e.term, e.type, copy_of(e.data)}, seg, place};
          }
        } else if constexpr (std::is_same_v<T, record::term> || std::is_same_v<T, record::vote>) {
          apply_register(r);
        } else if constexpr (std::is_same_v<T, record::truncate>) {
          entries_.erase(entries_.lower_bound(r.from.value()), entries_.end());
          next_ = r.from;
        } else if constexpr (std::is_same_v<T, record::snapshot>) {
          snapshot_ = stored_of(r);
          trailing_ = r.trailing;
          if (r.trailing == 0) {
            // An installed snapshot replaces the whole log (Raft 5.3, InstallSnapshot step 7).
            entries_.clear();
            next_ = log_index(r.index.value() + 1);
          } else {
            entries_.erase(entries_.begin(), entries_.lower_bound(keep_from(r)));
          }
        } else if constexpr (std::is_same_v<T, record::state>) {
          apply_register(r);
        }
      },
      body);
}

result<std::pair<group_state, live_group>> recovering_group::finish() && {
  group_state g;
  live_group live;
  g.term = term_;
  g.vote = vote_;
  g.snapshot = snapshot_;
  g.start = entries_.empty() ? next_ : log_index(entries_.begin()->first);
  std::uint64_t want = g.start.value();
  for (auto& [index, loc] : entries_) {
    if (index != want)
      return make_error(errc::corruption, fmt::format("entry {} missing (entries from {} to {} recovered)",
                                                      want, g.start.value(), entries_.rbegin()->first));
    ++want;
    const std::uint64_t bytes = entry_bytes(loc.e.data.size());
    const bool joins = !live.runs().empty() && live.runs().back().seg == loc.seg;
    live.push_run(entry_run{log_index(index), 1, joins ? bytes : items_record_overhead + bytes, 0, loc.seg});
    g.entries.push_back(std::move(loc.e));
    g.places.push_back(loc.place);
  }
  if (want != next_.value())
    return make_error(errc::corruption,
                      fmt::format("entries end below {} but the next index is {}", want, next_.value()));
  live.set_registers(term_, vote_, next_, std::move(snapshot_), trailing_);
  return std::pair<group_state, live_group>(std::move(g), std::move(live));
}

}  // namespace weir::raft

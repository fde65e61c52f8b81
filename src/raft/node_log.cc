#include "raft/node_log.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/log.h"
#include "raft/byte_codec.h"

namespace weir::raft {
namespace {

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

error corruption(std::string reason) {
  return make_error(errc::corruption, std::move(reason));
}

std::vector<std::byte> copy_of(std::span<const std::byte> b) {
  return {b.begin(), b.end()};
}

struct record_applier {
  group_state& g;

  status operator()(const record::entries& r) {
    if (r.first < g.start || r.first > g.next_index())
      return corruption(fmt::format("entries at {} but the group holds [{}, {})", r.first.value(),
                                    g.start.value(), g.next_index().value()));
    g.entries.resize(r.first.value() - g.start.value());
    for (const wire::entry& e : r.items) g.entries.push_back(stored_entry{e.term, e.type, copy_of(e.data)});
    return {};
  }
  status operator()(const record::term& r) {
    g.term = r.value;
    g.vote = node_id(0);
    return {};
  }
  status operator()(const record::vote& r) {
    g.vote = r.value;
    return {};
  }
  status operator()(const record::truncate& r) {
    if (r.from <= g.start) {
      g.entries.clear();
    } else if (r.from < g.next_index()) {
      g.entries.resize(r.from.value() - g.start.value());
    }
    return {};
  }
  status operator()(const record::snapshot& r) {
    std::vector<std::byte> conf;
    byte_writer w(conf);
    wire::encode_servers(r.conf, w);
    g.snapshot = stored_snapshot{r.index, r.term, r.conf_index, std::move(conf), copy_of(r.data)};
    if (r.trailing == 0) {
      // An installed snapshot replaces the whole log (Raft 5.3, InstallSnapshot step 7).
      g.entries.clear();
      g.start = log_index(r.index.value() + 1);
      return {};
    }
    if (r.index.value() > r.trailing) {
      const std::uint64_t keep_from = r.index.value() - r.trailing + 1;
      if (keep_from > g.start.value()) {
        const std::size_t drop = std::min<std::uint64_t>(g.entries.size(), keep_from - g.start.value());
        g.entries.erase(g.entries.begin(), g.entries.begin() + static_cast<std::ptrdiff_t>(drop));
        g.start = log_index(g.start.value() + drop);
      }
    }
    return {};
  }
};

}  // namespace

status apply_record(group_state& g, const record::body& r) {
  return std::visit(record_applier{g}, r);
}

void delayed_flusher::flush(storage::writable_file& f, std::vector<std::byte> bytes,
                            std::function<void(status)> done) {
  status st = f.append(bytes);
  ex_.add_timer(latency_(), [&f, st = std::move(st), done = std::move(done)]() mutable {
    if (!st) return done(std::move(st));
    done(f.sync());
  });
}

node_log::node_log(log_flusher& f, std::unique_ptr<storage::writable_file> file)
    : flusher_(f), file_(std::move(file)) {}

node_log::~node_log() {
  *alive_ = false;
}

result<std::unique_ptr<node_log>> node_log::open(storage::env& env, log_flusher& flusher, std::string path) {
  const std::string dir = parent_dir(path);
  std::vector<std::byte> content;
  if (env.file_exists(path)) {
    auto r = storage::read_whole_file(env, path);
    if (!r) return r.err();
    content = std::move(r).value();
  }
  if (content.size() < record::file_header_size) {
    // Missing, or torn while it was being created (nothing in it was ever acknowledged).
    if (env.file_exists(path)) {
      if (auto st = env.remove_file(path); !st) return st.err();
    }
    if (auto st = env.create_dirs(dir); !st) return st.err();
    auto f = env.open_writable(path, storage::open_mode::create_new);
    if (!f) return f.err();
    const auto header = record::encode_file_header();
    if (auto st = (*f)->append(header); !st) return st.err();
    if (auto st = (*f)->sync(); !st) return st.err();
    if (auto st = env.sync_dir(dir); !st) return st.err();
    return std::unique_ptr<node_log>(new node_log(flusher, std::move(f).value()));
  }
  if (!record::file_header_ok(content)) return corruption(fmt::format("{}: not a weir raft log", path));

  std::map<group_id, group_state> groups;
  std::size_t pos = record::file_header_size;
  while (pos < content.size()) {
    auto d = record::decode_record(std::span<const std::byte>(content).subspan(pos));
    if (!d || !d->has_value()) break;  // a torn or half-written tail: cut below
    const record::log_record& rec = (*d)->rec;
    if (auto st = apply_record(groups[rec.group], rec.payload); !st)
      return corruption(
          fmt::format("{} at byte {}: group {}: {}", path, pos, rec.group.value(), st.err().reason));
    pos += (*d)->consumed;
  }
  auto f = env.open_writable(path, storage::open_mode::open_existing);
  if (!f) return f.err();
  std::uint64_t cut = 0;
  if (pos < content.size()) {
    // Only the last batch can be torn; everything before it was synced whole.
    cut = content.size() - pos;
    log::warn("raft node log {}: cutting {} bytes of torn tail at byte {}", path, cut, pos);
    if (auto st = (*f)->truncate(pos); !st) return st.err();
    if (auto st = (*f)->sync(); !st) return st.err();
  }
  auto nl = std::unique_ptr<node_log>(new node_log(flusher, std::move(f).value()));
  nl->recovered_ = std::move(groups);
  nl->tail_cut_ = cut;
  return nl;
}

group_state node_log::take_group_state(group_id g) {
  auto it = recovered_.find(g);
  if (it == recovered_.end()) return group_state{};
  group_state s = std::move(it->second);
  recovered_.erase(it);
  return s;
}

std::uint64_t node_log::add(const record::log_record& r) {
  record::encode_record(r, pending_);
  return open_;
}

void node_log::flush() {
  if (flushing_ || pending_.empty()) return;
  const std::uint64_t batch = open_++;
  if (poisoned_) {
    pending_.clear();
    if (on_synced_) on_synced_(batch, *poisoned_);
    return;
  }
  flushing_ = true;
  bytes_written_ += pending_.size();
  std::vector<std::byte> bytes = std::move(pending_);
  pending_ = {};
  flusher_.flush(*file_, std::move(bytes), [this, batch, alive = alive_](status st) {
    if (*alive) on_flushed(batch, std::move(st));
  });
}

void node_log::on_flushed(std::uint64_t batch, status st) {
  flushing_ = false;
  if (!st && !poisoned_) {
    log::error("raft node log: batch {} failed: {}; the log is poisoned until restart", batch,
               st.err().reason);
    poisoned_ = st.err();
  }
  if (!poisoned_) {
    synced_ = batch;
    ++batches_synced_;
  }
  if (on_synced_) on_synced_(batch, poisoned_ ? status(*poisoned_) : status());
  flush();  // records added during the flush form the next batch
}

}  // namespace weir::raft

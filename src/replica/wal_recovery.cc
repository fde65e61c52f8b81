#include "replica/wal_recovery.h"

#include <charconv>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "base/log.h"
#include "replica/cold_restore.h"
#include "replica/cold_state.h"
#include "replica/partition.h"
#include "replica/placement.h"
#include "replica/shard_wal.h"
#include "streams/command_codec.h"
#include "tier/hot_tier.h"

namespace weir::replica {

namespace {

error start_error(const std::string& reason) {
  return make_error(storage::errc::corruption, reason);
}

// <root>/cores holds the count of logs (the core count the directory was created with) as decimal text;
// written once, on the first start. 0: none recorded yet.
result<unsigned> read_core_count(storage::env& e, const std::string& root) {
  const std::string path = storage::join_path(root, "cores");
  if (!e.file_exists(path)) return 0u;
  auto f = e.open_readable(path);
  if (!f) return f.err();
  char buf[32] = {};
  auto n = (*f)->read(0, std::as_writable_bytes(std::span(buf, sizeof buf - 1)));
  if (!n) return n.err();
  unsigned stored = 0;
  auto [p, ec] = std::from_chars(buf, buf + *n, stored);
  if (ec != std::errc() || stored == 0 || stored > max_logs) return start_error(path + ": not a core count");
  return stored;
}

status check_core_count(storage::env& e, const std::string& root, unsigned cores) {
  auto stored = read_core_count(e, root);
  if (!stored) return stored.err();
  if (*stored != 0) {
    if (*stored != cores) {  // node::start runs as many shards as the directory has logs
      return start_error("data dir has " + std::to_string(*stored) + " logs, not " + std::to_string(cores));
    }
    return {};
  }
  const std::string path = storage::join_path(root, "cores");
  const std::string tmp = path + ".tmp";
  if (e.file_exists(tmp)) (void)e.remove_file(tmp);
  auto f = e.open_writable(tmp, storage::open_mode::create_new);
  if (!f) return f.err();
  std::string text = std::to_string(cores) + "\n";
  if (auto st = (*f)->append(std::as_bytes(std::span(text.data(), text.size()))); !st) return st;
  if (auto st = (*f)->sync(); !st) return st;
  if (auto st = e.rename_file(tmp, path); !st) return st;
  return e.sync_dir(root);
}

std::string core_dir(const std::string& root, std::size_t i) {
  return storage::join_path(root, "core-" + std::to_string(i));
}

}  // namespace

result<unsigned> recorded_log_count(storage::env& e, const std::string& data_dir, unsigned fresh) {
  auto stored = read_core_count(e, storage::join_path(data_dir, "wal"));
  if (!stored) return stored.err();
  return *stored != 0 ? *stored : fresh;
}

result<storage::recovered_log> replay_core(storage::env& e, const std::string& dir, std::uint32_t core,
                                           streams::state_machine& sm, tier::cold_index& cold,
                                           tier::hot_tier& hot, wal_recovery_stats& stats) {
  auto restore = [&](const storage::checkpoint& ck) -> status {
    if (status st = restore_checkpoint(ck.blob, sm, cold); !st) {
      return start_error(dir + ": checkpoint at lsn " + std::to_string(ck.covered.value()) +
                         " does not load: " + st.err().reason);
    }
    ++stats.checkpoints;
    stats.checkpoint_streams += sm.size();
    return {};
  };
  auto replay = [&](const storage::record_view& r) -> status {
    const std::string where =
        dir + " segment " + std::to_string(r.pos.segment.value()) + " offset " + std::to_string(r.pos.offset);
    if (r.type == cold_index_record_type) {
      // Applied where it was applied first: the same state machine before it, the same result.
      auto applied = apply_index_record(cold, sm, r.payload);
      if (!applied)
        return start_error("undecodable cold index record in " + where + ": " + applied.err().reason);
      ++stats.index_records;
      return {};
    }
    if (r.type != streams::command_record_type) return start_error("unknown record type in " + where);
    std::string_view bytes(reinterpret_cast<const char*>(r.payload.data()), r.payload.size());
    auto cmd = streams::decode(bytes);
    if (!cmd) return start_error("undecodable command in " + where + ": " + cmd.err().reason);
    streams::outcome o = sm.apply(*cmd);
    follow_command(cold, sm, *cmd, o);
    ++stats.records;
    if (o.code != streams::errc::ok || !o.mutated || !o.meta) return {};
    const streams::payload* data = streams::command_data(*cmd);
    const std::size_t size = data ? data->size() : 0;
    if (size == 0) return {};
    streams::disk_location at;
    at.core = core;
    at.segment = r.pos.segment.value();
    at.offset = r.pos.offset;
    (void)streams::encode(*cmd, &at.data_offset);
    hot.admit(sm, o.meta->generation, o.meta->tail.value(), static_cast<std::uint32_t>(size), at);
    return {};
  };
  return storage::recover_log(e, dir, replay, restore);
}

status rebuild_core(storage::env& e, const std::string& dir, std::uint32_t core, streams::state_machine& sm,
                    tier::cold_index& cold, std::unique_ptr<tier::hot_tier>& hot, wal_recovery_stats& stats) {
  streams::state_machine fresh;
  tier::cold_index fresh_cold;
  std::unique_ptr<tier::hot_tier> fresh_hot = hot->empty_like();
  auto rec = replay_core(e, dir, core, fresh, fresh_cold, *fresh_hot, stats);
  if (!rec) return rec.err();
  // The rebuilt streams keep the log objects of the state they replace: forks on other cores point at
  // them, and the forks among them keep their links.
  fresh.adopt_logs(sm);
  for (const auto& link : fresh.forks_to_stitch()) {
    // A fork the old state did not have (cannot happen: the old state holds every durable command);
    // link it to its source if that lives on this core.
    if (auto src = fresh.log_of(link.source)) {
      fresh.stitch_fork(link.path, std::move(src));
      ++stats.forks_stitched;
    } else {
      log::error("weir serve: core {}: fork {} rebuilt without its source {}; inherited data not readable",
                 core, link.path, link.source);
    }
  }
  sm.swap(fresh);
  cold = std::move(fresh_cold);
  hot = std::move(fresh_hot);
  return {};
}

result<wal_recovery_stats> open_durable_store(storage::env& e, const wal_options& opts,
                                              const std::vector<partition*>& parts,
                                              segment_readers& readers) {
  wal_recovery_stats stats;
  const std::string root = storage::join_path(opts.data_dir, "wal");
  if (auto st = e.create_dirs(root); !st) return st.err();
  if (e.file_exists(storage::join_path(root, restoring_marker))) {
    return start_error(root + " holds a restore from the bucket that did not finish: remove " + root +
                       " and start with --restore again");
  }
  if (auto st = check_core_count(e, root, static_cast<unsigned>(parts.size())); !st) return st.err();

  readers.clear();
  std::vector<storage::segment_reader*> raw;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    readers.push_back(std::make_unique<storage::segment_reader>(e, core_dir(root, i)));
    raw.push_back(readers.back().get());
  }
  for (std::size_t i = 0; i < parts.size(); ++i) parts[i]->attach_segments(e, core_dir(root, i), raw);

  const unsigned n = static_cast<unsigned>(parts.size());
  // 1. Restore every core's state machine from its checkpoint and replay its log after it. Outcomes are
  // ignored: the effects they ask for (fork releases on other cores, subscription events) were carried
  // out, and logged where they change state, when the command first ran.
  std::vector<storage::recovered_log> recovered;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string dir = core_dir(root, i);
    if (auto st = e.create_dirs(dir); !st) return st.err();
    auto rec = replay_core(e, dir, static_cast<std::uint32_t>(i), parts[i]->machine(), parts[i]->cold_index(),
                           parts[i]->hot(), stats);
    if (!rec) return rec.err();
    if (rec->truncated_bytes > 0) {
      log::warn("weir serve: {}: cut a torn tail of {} bytes (never acknowledged)", dir,
                rec->truncated_bytes);
    }
    stats.truncated_bytes += rec->truncated_bytes;
    recovered.push_back(std::move(*rec));
  }

  // 2. Forks: neither the log nor a checkpoint carries a fork's link to its source's log (its records
  // before the fork point are read from there); link every fork to its source, which exists because
  // its fork_retain was durable before the fork's create ran, and a release is only sent once the
  // fork's delete is durable. Links are pointers to the source's log object, so the order does not
  // matter (a fork of a fork reads through its source's link).
  for (partition* s : parts) {
    for (const auto& link : s->machine().forks_to_stitch()) {
      const streams::state_machine& src = parts[owner_index(link.source, n)]->machine();
      std::shared_ptr<const streams::memory_log> log = src.log_of(link.source);
      if (!log) {
        log::error("weir serve: fork {}: source {} missing; inherited data lost", link.path, link.source);
        continue;
      }
      if (log->tail() < link.point) {
        log::error(
            "weir serve: fork {} of {}: source ends at {} before the fork point {}; inherited data lost",
            link.path, link.source, log->tail().value(), link.point.value());
      }
      s->machine().stitch_fork(link.path, std::move(log));
      ++stats.forks_stitched;
    }
  }

  // 3. References a crash left behind: a retain durable whose fork's create never ran, or a fork's
  // delete durable whose release was not. Count the forks that exist (soft-deleted ones included: they
  // keep their reference) and release the difference through the log once the loops run, so that the
  // release (and any cascade it causes) is replayed next time exactly as it ran.
  std::unordered_map<std::string, std::uint32_t> held;
  for (partition* s : parts) {
    for (auto& l : s->machine().forks()) ++held[l.source];
  }
  for (partition* s : parts) {
    for (auto& [path, count] : s->machine().ref_counts()) {
      std::uint32_t real = held.count(path) ? held[path] : 0;
      if (count <= real) continue;
      log::warn("weir serve: {} holds {} fork references, {} forks exist; releasing the rest", path, count,
                real);
      stats.leaked_references += count - real;
      for (std::uint32_t k = real; k < count; ++k) {
        s->executor().post([s, path = path] { (void)s->submit(streams::fork_release_command{path}); });
      }
    }
  }

  // 4. Writers, continuing where recovery left each log.
  storage::log_options lo;
  lo.sync = opts.sync;
  lo.segment_bytes = opts.segment_bytes;
  lo.gather = opts.gather;
  lo.prepare_segments = opts.prepare_segments;
  lo.fence_after_failure = true;  // a failed write is undone by rebuilding the core's state (partition)
  for (std::size_t i = 0; i < parts.size(); ++i) {
    raft::executor* ex = &parts[i]->executor();
    auto w = storage::log_writer::open(
        e, core_dir(root, i), lo, recovered[i], [ex](std::function<void()> fn) { ex->post(std::move(fn)); },
        opts.worker);
    if (!w) return w.err();
    // A checkpoint taken before the first new write covers what recovery replayed, not lsn 0.
    parts[i]->attach_wal(std::move(*w), storage::lsn{recovered[i].next_lsn.value() - 1});
    // What recovery restored counts from the first request on (the stream quota).
    parts[i]->recount_streams();
  }
  return stats;
}

}  // namespace weir::replica

#include "replica/cold_restore.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

#include "raft/node_log_seed.h"
#include "storage/checkpoint_store.h"
#include "storage/types.h"

namespace weir::replica {

namespace {

error restore_error(std::string reason) {
  return make_error(storage::errc::not_found, "restore: " + std::move(reason));
}

error store_failure(const std::string& what, const tier::store_error& e) {
  return make_error(storage::errc::io_error, "restore: " + what + ": " + e.describe());
}

// Every key under `prefix`, page by page.
result<std::vector<tier::object_info>> list_all(tier::object_store& store, const std::string& prefix) {
  std::vector<tier::object_info> out;
  std::string token;
  for (;;) {
    auto page = store.list(prefix, token);
    if (!page) return store_failure("listing " + prefix, page.err());
    out.insert(out.end(), page->objects.begin(), page->objects.end());
    if (!page->truncated || page->next_token.empty()) return out;
    token = page->next_token;
  }
}

std::string epoch_file(const std::string& data_dir) {
  return storage::join_path(storage::join_path(data_dir, "wal"), "cold-epoch");
}

}  // namespace

std::int64_t restore_point::taken_at_ms() const {
  std::int64_t oldest = std::numeric_limits<std::int64_t>::max();
  for (const group& g : groups) oldest = std::min(oldest, g.header.taken_at_ms);
  return groups.empty() ? 0 : oldest;
}

result<restore_point> find_restore_point(tier::object_store& store) {
  // Epochs are numbered from 1 and a restore adds one to the highest: the first empty one ends them.
  std::uint32_t last = 0;
  for (std::uint32_t e = 1; e <= std::numeric_limits<std::uint16_t>::max(); ++e) {
    auto page = store.list(tier::epoch_key_prefix(tier::cold_epoch(static_cast<std::uint16_t>(e))), "", 1);
    if (!page) return store_failure("listing the epochs", page.err());
    if (page->objects.empty()) break;
    last = e;
  }
  if (last == 0) return restore_error("the bucket holds nothing of weir's under this prefix");
  if (last == std::numeric_limits<std::uint16_t>::max()) return restore_error("no epoch left above the last");
  std::string missing;
  for (std::uint32_t e = last; e >= 1; --e) {
    const tier::cold_epoch epoch(static_cast<std::uint16_t>(e));
    auto listed = list_all(store, tier::snapshot_key_prefix(epoch));
    if (!listed) return listed.err();
    // The newest snapshot of each group (keys sort by term, then sequence).
    std::map<std::uint32_t, tier::object_info> newest;
    for (const tier::object_info& o : *listed) {
      auto name = tier::parse_snapshot_key(o.key);
      if (name && name->epoch == epoch) newest[name->group.value()] = o;
    }
    if (newest.empty()) {
      missing += (missing.empty() ? "" : "; ") + std::string("epoch ") + std::to_string(e) + ": no snapshot";
      continue;
    }
    restore_point p;
    p.epoch = epoch;
    p.next_epoch = tier::cold_epoch(static_cast<std::uint16_t>(last + 1));
    for (const auto& [group, info] : newest) {
      // A snapshot in parts: each read by its key and checked against the head's table.
      auto whole = tier::read_restore_snapshot(store, info.key);
      if (!whole) {
        error failure = whole.err();
        failure.reason = "restore: " + info.key + ": " + failure.reason;
        return failure;
      }
      auto v = tier::decode_restore_snapshot(*whole);
      if (!v) return restore_error(info.key + ": " + v.err().reason);
      if (v->header.epoch != epoch || v->header.group.value() != group) {
        return restore_error(info.key + ": its header names epoch " +
                             std::to_string(v->header.epoch.value()) + " group " +
                             std::to_string(v->header.group.value()));
      }
      if (!p.groups.empty() && v->header.groups != p.groups.front().header.groups) {
        return restore_error(info.key + ": " + std::to_string(v->header.groups) + " groups, " +
                             p.groups.front().key + ": " + std::to_string(p.groups.front().header.groups));
      }
      restore_point::group g;
      g.key = info.key;
      g.header = v->header;
      g.object = std::move(*whole);
      p.groups.push_back(std::move(g));
    }
    const std::uint32_t groups = p.groups.front().header.groups;
    if (p.groups.size() == groups && newest.rbegin()->first + 1 == groups) return p;
    missing += (missing.empty() ? "" : "; ") + std::string("epoch ") + std::to_string(e) + ": snapshots of " +
               std::to_string(p.groups.size()) + " of " + std::to_string(groups) + " groups";
  }
  return restore_error("no epoch has a snapshot of every group (" + missing + ")");
}

namespace {

std::span<const std::byte> text_bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// <data_dir>/wal, which must not exist, with the marker in it.
result<std::string> begin_restore(storage::env& e, const std::string& data_dir) {
  const std::string root = storage::join_path(data_dir, "wal");
  if (e.file_exists(root)) {
    return make_error(storage::errc::invalid_argument,
                      "restore: " + root + " exists: a restore starts from an empty data directory");
  }
  if (auto st = e.create_dirs(root); !st) return st.err();
  const std::string marker = storage::join_path(root, restoring_marker);
  if (auto st = storage::replace_file(e, marker, text_bytes("a restore from the bucket is under way\n"));
      !st) {
    return st.err();
  }
  return root;
}

// The epoch the node uploads under, then the marker removed.
status end_restore(storage::env& e, const std::string& data_dir, const std::string& root,
                   const restore_point& p) {
  if (auto st = storage::replace_file(e, epoch_file(data_dir),
                                      text_bytes(std::to_string(p.next_epoch.value()) + "\n"));
      !st) {
    return st;
  }
  if (auto st = e.remove_file(storage::join_path(root, restoring_marker)); !st) return st;
  return e.sync_dir(root);
}

}  // namespace

status write_restored_cluster(storage::env& e, const std::string& data_dir, const restore_point& p,
                              std::uint32_t lanes, const std::map<std::uint64_t, std::string>& members) {
  const std::uint32_t groups = static_cast<std::uint32_t>(p.groups.size());
  const std::string raft_dir = storage::join_path(data_dir, "raft");
  if (e.file_exists(raft_dir)) {
    return make_error(storage::errc::invalid_argument,
                      "restore: " + raft_dir + " exists: a restore starts from an empty data directory");
  }
  auto root = begin_restore(e, data_dir);
  if (!root) return root.err();
  std::vector<raft::wire::server> conf;
  for (const auto& [id, address] : members) conf.push_back(raft::wire::server{raft::node_id(id), 1, address});
  // The replicator's snapshot buffer: the index (no membership recorded), then the group's state.
  std::vector<std::vector<std::byte>> buffers(groups);
  for (std::uint32_t lane = 0; lane < lanes; ++lane) {
    std::vector<raft::seeded_group> seeded;
    for (std::uint32_t g = lane; g < groups; g += lanes) {
      const restore_point::group& rg = p.groups[g];
      auto name = tier::parse_snapshot_key(rg.key);
      if (!name) return make_error(storage::errc::corruption, "restore: " + rg.key + ": not a snapshot key");
      std::vector<std::byte>& buf = buffers[g];
      for (int i = 0; i < 8; ++i) buf.push_back(static_cast<std::byte>(rg.header.lsn >> (8 * i)));
      const auto state = rg.state();
      buf.insert(buf.end(), state.begin(), state.end());
      seeded.push_back(raft::seeded_group{raft::group_id(g), raft::log_index(rg.header.lsn),
                                          raft::term_id(std::max<std::uint64_t>(1, name->term.value())), conf,
                                          buf});
    }
    const std::string dir =
        lane == 0 ? raft_dir : storage::join_path(raft_dir, "lane-" + std::to_string(lane));
    if (auto st = raft::seed_node_log(e, storage::join_path(dir, "node.log"), seeded); !st) return st;
  }
  return end_restore(e, data_dir, *root, p);
}

status write_restored_logs(storage::env& e, const std::string& data_dir, const restore_point& p) {
  auto begun = begin_restore(e, data_dir);
  if (!begun) return begun.err();
  const std::string& root = *begun;
  auto as_bytes = [](const std::string& s) { return text_bytes(s); };
  for (std::size_t i = 0; i < p.groups.size(); ++i) {
    const restore_point::group& g = p.groups[i];
    const std::string dir = storage::join_path(root, "core-" + std::to_string(i));
    if (auto st = e.create_dirs(dir); !st) return st;
    storage::checkpoint_store ck(e, dir);
    if (auto st = ck.write(storage::lsn(g.header.lsn), g.state()); !st) return st;
    if (auto st = e.sync_dir(dir); !st) return st;
  }
  if (auto st = storage::replace_file(e, storage::join_path(root, "cores"),
                                      as_bytes(std::to_string(p.groups.size()) + "\n"));
      !st) {
    return st;
  }
  return end_restore(e, data_dir, root, p);
}

result<tier::cold_epoch> read_cold_epoch(storage::env& e, const std::string& data_dir) {
  const std::string path = epoch_file(data_dir);
  if (!e.file_exists(path)) return tier::cold_epoch(1);
  auto text = storage::read_whole_file(e, path);
  if (!text) return text.err();
  const char* b = reinterpret_cast<const char*>(text->data());
  const char* end = b + text->size();
  std::uint16_t epoch = 0;
  auto [q, ec] = std::from_chars(b, end, epoch);
  if (ec != std::errc() || epoch == 0 || (q != end && *q != '\n')) {
    return make_error(storage::errc::corruption, path + ": not an epoch");
  }
  return tier::cold_epoch(epoch);
}

}  // namespace weir::replica

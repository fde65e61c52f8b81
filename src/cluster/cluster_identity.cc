#include "cluster/cluster_identity.h"

#include <charconv>
#include <cstddef>
#include <random>
#include <span>
#include <string_view>

#include "cluster/key_value_text.h"

namespace weir::cluster {
namespace {

error corrupt(std::string reason) {
  return make_error(identity_errc::corrupt, std::move(reason));
}

error io(const std::string& path, const error& e) {
  return make_error(identity_errc::io_error, "cluster identity " + path + ": " + e.reason);
}

std::string describe(const std::string& data_dir, const cluster_identity& id) {
  return "data directory " + data_dir + " belongs to node " + std::to_string(id.node_id) +
         " of a cluster with " + std::to_string(id.groups) + " groups" +
         (id.lanes != 1 ? " in " + std::to_string(id.lanes) + " lanes" : std::string());
}

// The single-node layout's log (server/wal_recovery.cc: <data-dir>/wal/core-N).
bool has_single_node_data(storage::env& e, const std::string& data_dir) {
  return e.file_exists(storage::join_path(data_dir, "wal"));
}

result<cluster_identity> read_identity(storage::env& e, const std::string& path) {
  auto bytes = storage::read_whole_file(e, path);
  if (!bytes) return io(path, bytes.err());
  auto id = parse_identity(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!id) return corrupt("cluster identity " + path + ": " + id.err().reason);
  return id;
}

// storage::replace_file: after a crash the file is either absent (the next start writes it again) or whole.
status write_identity(storage::env& e, const std::string& data_dir, const cluster_identity& id) {
  const std::string path = storage::join_path(data_dir, identity_file_name);
  if (auto st = e.create_dirs(data_dir); !st) return io(path, st.err());
  const std::string text = format_identity(id);
  if (auto st = storage::replace_file(e, path, std::as_bytes(std::span(text.data(), text.size()))); !st)
    return io(path, st.err());
  return {};
}

}  // namespace

std::string format_identity(const cluster_identity& id) {
  return "# weir: this data directory belongs to a node of a cluster (docs/operations.md, \"Cluster\")\n"
         "node-id = " +
         std::to_string(id.node_id) + "\ngroups = " + std::to_string(id.groups) + "\n" +
         (id.lanes != 1 ? "lanes = " + std::to_string(id.lanes) + "\n" : std::string()) +
         (id.incarnation != 0 ? "incarnation = " + std::to_string(id.incarnation) + "\n" : std::string());
}

result<cluster_identity> parse_identity(std::string_view text) {
  cluster_identity id;
  bool has_node = false;
  bool has_groups = false;
  bool has_lanes = false;
  bool has_incarnation = false;
  auto failed = for_each_key_value(
      text,
      [&](std::string_view key, std::string_view value, std::string_view line) -> std::optional<std::string> {
        std::uint64_t v = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (value.empty() || ec != std::errc{} || end != value.data() + value.size()) {
          return "'" + std::string(line) + "': the value is not a whole number";
        }
        if (key == "node-id" && !has_node) {
          if (v == 0) return "node-id 0";
          id.node_id = v;
          has_node = true;
        } else if (key == "groups" && !has_groups) {
          if (v == 0 || v > max_groups) return "groups " + std::to_string(v);
          id.groups = static_cast<std::uint32_t>(v);
          has_groups = true;
        } else if (key == "lanes" && !has_lanes) {
          if (v == 0 || v > max_lanes) return "lanes " + std::to_string(v);
          id.lanes = static_cast<std::uint32_t>(v);
          has_lanes = true;
        } else if (key == "incarnation" && !has_incarnation) {
          if (v == 0) return "incarnation 0";
          id.incarnation = v;
          has_incarnation = true;
        } else {
          return "unknown or repeated key '" + std::string(key) + "'";
        }
        return std::nullopt;
      });
  if (failed) return corrupt(std::move(*failed));
  if (!has_node || !has_groups) return corrupt(has_node ? "groups missing" : "node-id missing");
  return id;
}

bool is_cluster_dir(storage::env& e, const std::string& data_dir) {
  return e.file_exists(storage::join_path(data_dir, identity_file_name));
}

std::uint64_t random_incarnation() {
  std::random_device rd;
  for (;;) {
    const std::uint64_t v = std::uint64_t{rd()} << 32 | rd();
    if (v != 0) return v;
  }
}

result<cluster_identity> claim_identity(storage::env& e, const std::string& data_dir,
                                        const cluster_options& o, std::uint64_t fresh_incarnation) {
  if (fresh_incarnation == 0) fresh_incarnation = random_incarnation();
  const std::string path = storage::join_path(data_dir, identity_file_name);
  const bool has_identity = e.file_exists(path);
  if (!o.enabled()) {
    if (!has_identity) return cluster_identity{};
    auto id = read_identity(e, path);
    if (!id) return id.err();
    return make_error(
        identity_errc::wrong_mode,
        describe(data_dir, *id) + ": start it as that node (--node-id " + std::to_string(id->node_id) +
            " --raft-groups " + std::to_string(id->groups) +
            (id->lanes != 1 ? " --raft-lanes " + std::to_string(id->lanes) : std::string()) +
            " with --peer-listen and --peers), or give --data-dir another directory to run alone");
  }
  if (has_identity) {
    auto id = read_identity(e, path);
    if (!id) return id.err();
    std::string started;
    if (id->node_id != o.node_id) started += " --node-id " + std::to_string(o.node_id);
    if (id->groups != o.groups) started += " --raft-groups " + std::to_string(o.groups);
    if (id->lanes != o.lanes) started += " --raft-lanes " + std::to_string(o.lanes);
    if (!started.empty()) {
      return make_error(identity_errc::mismatch,
                        describe(data_dir, *id) + "; started with" + started +
                            " (every node keeps a data directory of its own, and a cluster's group count is "
                            "fixed when it is created)");
    }
    if (id->incarnation == 0) {  // written before incarnations existed: this directory gets one now
      id->incarnation = fresh_incarnation;
      if (auto st = write_identity(e, data_dir, *id); !st) return st.err();
    }
    return id;
  }
  if (has_single_node_data(e, data_dir)) {
    return make_error(identity_errc::wrong_mode,
                      "data directory " + data_dir + " holds a single-node weir's data (" +
                          storage::join_path(data_dir, "wal") +
                          "): a cluster node starts on a data directory of its own; give --data-dir a new "
                          "directory, or start without --node-id to run alone on this one");
  }
  cluster_identity id{o.node_id, o.groups, o.lanes, true, fresh_incarnation};
  if (auto st = write_identity(e, data_dir, id); !st) return st.err();
  return id;
}

}  // namespace weir::cluster

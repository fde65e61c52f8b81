// cluster_identity: which node of which cluster a data directory belongs to, so that a node never runs
// on another node's data or with another group count (a stream's group is its path's hash modulo the
// group count: a different count would look for every stream in the wrong group).
//
// On disk: `<data-dir>/cluster`, a small text file written once, when a cluster node first starts on
// the directory (temp file, fsync, rename, directory fsync):
//
//     # weir: this data directory belongs to a node of a cluster (docs/operations.md, "Cluster")
//     node-id = 1
//     groups = 64
//     lanes = 2          (only when not 1: a file without it names one lane)
//     incarnation = 7302651394087331208
//
// The incarnation is a random 64-bit number (never 0) drawn when the file is written, so it names this
// directory, not the node id: a node started again under its id on an empty directory has another one,
// and its peers, which remember the one they accepted (incarnation_book), refuse its links
// (docs/replication.md, "A node that lost its data directory"). A file written before incarnations
// existed has none; the next start adds one and rewrites the file.
//
// A single-node directory has no such file; its data is `<data-dir>/wal` (server/wal_recovery.cc).
// Start-up only (blocking calls through storage::env), with the data directory's lock held
// (storage::dir_lock), on the thread that starts the node.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "cluster/cluster_options.h"
#include "storage/env.h"

namespace weir::cluster {

enum class identity_errc : int {
  io_error = 1,  // reading or writing the file failed (the reason says what the OS said)
  corrupt,       // the file is there but does not read as an identity
  mismatch,      // the directory belongs to another node id, or was made with another group count
  wrong_mode,    // a single-node directory started as a cluster node, or the other way round
};

struct cluster_identity {
  std::uint64_t node_id = 0;  // 0: a single-node directory (claim_identity without a node id)
  std::uint32_t groups = 0;   // 0 likewise
  std::uint32_t lanes = 1;    // cluster_options::lanes, fixed like the group count
  // This start wrote the file: the node is new to its cluster (nothing of any group on its disk yet).
  bool created = false;
  std::uint64_t incarnation = 0;  // 0 only in a single-node directory's (empty) identity
  bool operator==(const cluster_identity&) const = default;
};

// The name of the identity file in a data directory.
inline constexpr const char* identity_file_name = "cluster";

// True if `data_dir` holds a cluster identity file (a node of a cluster made it).
bool is_cluster_dir(storage::env& e, const std::string& data_dir);

// Makes sure `data_dir` may be used as `o` says, and records it on a cluster node's first start:
//   * o.enabled() and the directory has an identity: it must name o.node_id, o.groups and o.lanes (mismatch,
//     naming both); the identity is returned.
//   * o.enabled(), no identity: refused (wrong_mode) if the directory holds single-node data
//     (`wal`); otherwise the identity is written (the directory is created if missing) and returned
//     with created = true.
//   * !o.enabled(): refused (wrong_mode) if the directory is a cluster node's; otherwise nothing is
//     written and {0, 0, 1, false} is returned. A single-node start can thus call it too.
// A new identity, or one read without an incarnation (written before there were any), gets
// `fresh_incarnation` (0: a random one), written with it.
result<cluster_identity> claim_identity(storage::env& e, const std::string& data_dir,
                                        const cluster_options& o, std::uint64_t fresh_incarnation = 0);

// A random incarnation, never 0.
std::uint64_t random_incarnation();

// The file's text for an identity, and the identity a text describes (errors: identity_errc::corrupt).
std::string format_identity(const cluster_identity& id);
result<cluster_identity> parse_identity(std::string_view text);

}  // namespace weir::cluster

// incarnation_book: the incarnation (cluster_identity::incarnation) this node last accepted in a peer-link
// hello from each member id, kept in `<data-dir>/incarnations` so that a restart remembers it.
//
// Why: raft counts on a node keeping what it acknowledged and the votes it cast. A node whose data
// directory was lost and that is started again under the same id on an empty one would vote again in a
// term and count as holding entries it no longer has. Its new directory has a new incarnation, so its
// peers, which remember the old one, refuse its links (docs/replication.md, "A node that lost its data
// directory"). A member removed through the membership API is forgotten (forget), so that the same id
// may join again on a new directory.
//
// On disk, a small text file rewritten whole on each change (temp file, fsync, rename, directory fsync):
//
//     # weir: the incarnations of the data directories of this node's peers (docs/replication.md)
//     node-2 = 9384023742234
//     node-3 = 1209384756
//
// Single-threaded: core lane 0's loop (its peer_links), which sees every hello; its writes block that
// loop, once per new member incarnation and per removal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "storage/env.h"

namespace weir::cluster {

enum class incarnation_errc : int {
  io_error = 1,  // reading or writing the file failed
  corrupt,       // the file does not read as a book
};

class incarnation_book {
 public:
  // The name of the file in a data directory.
  static constexpr const char* file_name = "incarnations";

  // Reads `<data_dir>/incarnations` (none: an empty book).
  static result<incarnation_book> open(storage::env& e, const std::string& data_dir);

  enum class verdict {
    known,     // the same incarnation as last accepted
    recorded,  // the first one seen for this id: now remembered, durably
    other,     // another incarnation than the one remembered: refuse it
  };
  // Judges a hello from `id` with `incarnation` (0: a node that has none, as in tests: accepted,
  // nothing recorded). A write error is returned as such, and the hello should be refused (the next
  // one tries again).
  result<verdict> judge(std::uint64_t id, std::uint64_t incarnation);
  // The id left the cluster: a later hello under it is a new node. Durable on return.
  weir::status forget(std::uint64_t id);
  std::optional<std::uint64_t> find(std::uint64_t id) const;
  const std::map<std::uint64_t, std::uint64_t>& entries() const { return by_id_; }

  static std::string format(const std::map<std::uint64_t, std::uint64_t>& by_id);
  static result<std::map<std::uint64_t, std::uint64_t>> parse(std::string_view text);

 private:
  incarnation_book(storage::env& e, std::string path) : env_(&e), path_(std::move(path)) {}
  weir::status store(const std::map<std::uint64_t, std::uint64_t>& next);

  storage::env* env_;
  std::string path_;
  std::map<std::uint64_t, std::uint64_t> by_id_;
};

}  // namespace weir::cluster

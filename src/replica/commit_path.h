// commit_path: how a partition makes a command durable and a read current. Two implementations: a single
// node's write-ahead log (partition's own, shard_wal) and a raft lane of a cluster (server/replication:
// a command is proposed to its stream's group and applied on every node once committed). The HTTP front
// calls only this interface, so that it never asks which one it runs on.
//
// Lives on the partition's loop: every method runs there, and every callback runs there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "replica/errc.h"
#include "replica/shard_wal.h"
#include "streams/command.h"
#include "streams/state_machine.h"

namespace weir::replica {

class commit_path {
 public:
  using completion = shard_wal::completion;
  virtual ~commit_path() = default;

  // Makes `c` durable and applied; `done` runs once it is (with the outcome of this node's apply) or once
  // it failed (durable_result::failure). The returned outcome is the apply's when it happened at once
  // (the local log applies first, then logs); a raft lane returns an empty outcome and callers wait for
  // `done`.
  virtual streams::outcome submit(const streams::command& c, completion done) = 0;
  // Commands submitted and not completed yet, and their bytes (writes are refused beyond a bound).
  virtual std::size_t in_flight() const = 0;
  virtual std::size_t in_flight_bytes() const = 0;
  // `ready(true)` once a read of `path` sees every write acknowledged before the call: on one node once
  // the commands before it are durable (a stream past its TTL is expired on the way); in a cluster once
  // this node applied its group's read index. `ready(false)`: it cannot be made current (no quorum).
  virtual void linearize(const std::string& path, std::int64_t now_ms, std::function<void(bool)> ready) = 0;
  // A read of `path` may begin: the stream is current (linearize, where it is needed) and a sliding TTL
  // renewed (PROTOCOL.md 5.1). `ready` gets the partition's failure (ok, or why it could not) and the
  // stream's code (ok, not_found...). May run before prepare_read returns.
  virtual void prepare_read(const std::string& path, std::int64_t now_ms,
                            std::function<void(errc, streams::errc)> ready) = 0;
  // Whether this node starts the commands nobody asked for on `path` (a TTL's expiry): on one node
  // always, in a cluster the leader of its group.
  virtual bool leads(const std::string& path) const = 0;
  // This node was removed from its cluster: it serves no stream any more.
  virtual bool left() const = 0;
  // Whether fork references name their fork (a cluster's fork sweep looks for it; fork_retain_command).
  virtual bool names_forks() const = 0;
  // Whether the commands of two of this partition's streams are applied in one log, in the same order on
  // every replica: on one node always, in a cluster when both are in one raft group.
  virtual bool same_log(std::string_view a, std::string_view b) const = 0;
};

}  // namespace weir::replica

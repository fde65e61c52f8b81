// snapshot_transfer: how a cluster node's group snapshot reaches a peer that lacks the data it references
// (docs/replication.md, "Snapshots"). A stored snapshot is metadata plus references into this node's
// data log (and the records not yet synced there, inline); the peer cannot read this node's data log.
//
// Sender (libraft sends an InstallSnapshot of group g to peer p; raft::node_io hands it here):
//   1. the references of the snapshot's streams part (streams::snapshot_part_references), each distinct
//      (place, slice) once, are the transfer's records, in the snapshot's order;
//   2. chunk 0 opens the transfer: it names the snapshot (last index, term) and carries no record; the
//      receiver answers how many of the transfer's first records it already holds (`resume`: kept from
//      a dropped transfer of the same snapshot) and names the other records of this sender it holds
//      (`held`), and the sender starts with the next record, skipping those named;
//   3. the records' bytes are read OFF the event loop (ports::read: the server's cold_reader thread) and
//      sent as snapshot_chunk frames of at most raft::wire::max_chunk_bytes of record bytes (a larger
//      record spans several pieces), sequence 1, 2, ...;
//   4. flow control: at most `window` chunks are read or sent and not yet acknowledged by the receiver
//      (it acknowledges a chunk once its records are written to its data log), so a transfer holds at
//      most window x 1 MiB here, and the receiver at most that in its data log's queue;
//   5. then the InstallSnapshot itself, as stored (references in the sender's places), naming the
//      transfer and its chunk count. A snapshot without references goes out at once, as before.
// A new InstallSnapshot of the same group to the same peer replaces the transfer in progress when it
// is another snapshot (or the transfer stalled); the same snapshot again (libraft retries after its
// install timeout, 30 s, which a large group on a slow link may need) lets the transfer go on instead of
// starting over. A transfer without an acknowledgement for `stall_ms` is dropped (libraft sends again).
//
// Receiver (per sender and group, one transfer at a time):
//   1. pieces are put together into records, in order; each record is written to this node's data log
//      (ports::write: data_log::write_raw, which pins its segment under this node's pin id of the
//      transfer), and its place here remembered: sender's (place, slice) -> this node's;
//   2. the InstallSnapshot arrives: once every record is written and a data-log sync covers them
//      (ports::when_durable), the streams part's references are rewritten to this node's places
//      (streams::relocate_snapshot_part) and the rewritten InstallSnapshot goes to libraft
//      (ports::deliver), which stores it in the node log and restores it (replication::restore_snapshot);
//   3. the transfer's pins are dropped once the group restored a snapshot (restored()), which pins what
//      its state references, or after 60 s without a restore.
// A transfer dropped for its link (a chunk out of order, an install whose chunk count differs, `stall_ms`
// without a chunk) keeps its progress: the records written, their pins and the map, for `keep_ms` (at
// most `keep_max` transfers, `keep_bytes` of records in all: the oldest go first). A later transfer
// from the same sender takes it over, of the same snapshot or another (a newer one, taken meanwhile),
// and so does one that replaces a transfer in progress: it is answered the number of the first records,
// in the sender's order, that are written (the same snapshot only) and the other records of the sender
// written here (a record only partly received is sent again whole; a record's bytes at a sender's
// (place, slice) never change, so a written copy serves any transfer from that sender). Progress over
// `keep_bytes` is discarded when another snapshot comes, and so is progress after a failed write, a
// snapshot referencing a record that never arrived, or a malformed one. A duplicate chunk is ignored.
//
// Lives on its lane's loop (the replication's); every method runs there, and every port is called there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "raft/executor.h"
#include "raft/node_io.h"
#include "raft/wire_format.h"
#include "streams/types.h"

namespace weir::replica {

struct snapshot_transfer_stats {
  std::uint64_t chunks_sent = 0, bytes_sent = 0;          // record bytes in chunks
  std::uint64_t chunks_received = 0, bytes_received = 0;  // record bytes taken in
  std::uint64_t transfers_sent = 0;                       // installs sent after their chunks
  std::uint64_t transfers_completed = 0;                  // received and handed to libraft
  std::uint64_t transfers_dropped = 0;                    // either side: failed, stalled or out of order
  std::uint64_t transfers_replaced = 0;                   // either side: a newer one for the same group
  std::uint64_t transfers_continued = 0;  // libraft sent the snapshot in transfer again: not restarted
  std::uint64_t transfers_kept = 0;       // receiver: dropped, its records kept for a resume
  std::uint64_t transfers_resumed = 0;    // either side: started after records the receiver kept
  std::uint64_t bytes_skipped = 0;        // sender: record bytes not sent again (the receiver held them)
};

class snapshot_transfers final : public raft::node_io::snapshot_transfers {
 public:
  using install = raft::node_io::snapshot_install;
  // Bytes [offset, offset + length) of the record `key` references (its slice, from key.begin on).
  struct piece_read {
    raft::wire::record_key key;
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
  };
  using read_done = std::function<void(result<std::vector<std::string>>)>;

  // What the transfers do with the node; replication.cc wires the real ones, tests fakes. All are called
  // on the executor's thread; the asynchronous ones call back there, never inside the call.
  struct ports {
    std::function<void(raft::node_id to, raft::group_id g, raft::wire::snapshot_chunk c)> send_chunk;
    std::function<void(raft::node_id to, raft::group_id g, raft::wire::snapshot_chunk_ack a)> send_ack;
    std::function<bool(const install& s)> send_install;
    std::function<bool(const install& s)> deliver;
    // Sender: the bytes of each piece, in order, read off the loop.
    std::function<void(std::vector<piece_read> pieces, read_done done)> read;
    // Receiver: data_log::write_raw, unpin_transfer, when_durable. `pin` is this node's id of a
    // transfer's pins (from the same counter as its own transfer ids: unique on the node).
    std::function<void(std::uint64_t pin, std::string bytes,
                       std::function<void(result<streams::disk_location>)> done)>
        write;
    std::function<void(std::uint64_t pin)> unpin;
    std::function<void(const streams::disk_location& at, std::function<void()> fn)> when_durable;
    // Where the group snapshot starts in libraft's snapshot buffer (what precedes it is the replicator's:
    // cluster::replicator::snapshot_state_offset); nullopt when malformed.
    std::function<std::optional<std::size_t>(std::span<const std::byte> data)> state_offset;
  };
  struct options {
    unsigned window = 4;                                      // chunks read or sent and not acknowledged
    std::uint32_t chunk_bytes = raft::wire::max_chunk_bytes;  // record bytes per chunk
    std::int64_t stall_ms = 10'000;                           // without news: the transfer is dropped
    std::uint64_t first_id = 1;                               // transfer ids of this run start here (not 0)
    // A dropped transfer's progress (receiver) is kept this long, for at most this many transfers and
    // this many record bytes in all (pinned data-log segments): past a bound the oldest goes.
    std::int64_t keep_ms = 60'000;
    std::size_t keep_max = 8;
    std::uint64_t keep_bytes = std::uint64_t{4} << 30;
  };

  snapshot_transfers(raft::executor& ex, ports p, options o);
  ~snapshot_transfers() override;
  snapshot_transfers(const snapshot_transfers&) = delete;
  snapshot_transfers& operator=(const snapshot_transfers&) = delete;

  // raft::node_io::snapshot_transfers.
  void send(install s) override;
  void on_chunk(raft::node_id from, raft::group_id g, const raft::wire::snapshot_chunk& c) override;
  void on_chunk_ack(raft::node_id from, raft::group_id g, const raft::wire::snapshot_chunk_ack& a) override;
  void on_install(install s) override;

  // Group `g` restored a snapshot here (its state's references are pinned by then): the pins of the
  // transfers delivered for it go.
  void restored(raft::group_id g);

  const snapshot_transfer_stats& stats() const { return stats_; }
  // Transfers in progress, dropped transfers kept for a resume, delivered ones still pinned (tests).
  std::size_t sending() const { return out_.size(); }
  std::size_t receiving() const;
  std::size_t kept() const;
  std::size_t delivered_pinned() const { return delivered_.size(); }

  struct outgoing;  // snapshot_transfer.cc
  struct incoming;

 private:
  using key = std::pair<std::uint64_t, std::uint32_t>;  // peer node, group
  void pump(outgoing& t);
  void on_read(std::uint64_t id, key k, std::uint32_t seq, std::vector<piece_read> pieces,
               result<std::vector<std::string>> bytes);
  void drop_out(key k, const std::string& why);
  void open_in(key k, const raft::wire::snapshot_chunk& c);
  bool take_piece(incoming& t, const raft::wire::record_piece& p);  // false: the transfer was dropped
  void on_written(key k, std::uint64_t pin, std::uint64_t id, std::uint32_t seq, raft::wire::record_key rk,
                  result<streams::disk_location> at);
  void send_acks(incoming& t);
  void try_finish(incoming& t);
  void finish(key k, std::uint64_t sync_wait);
  // Drops the transfer from `k`: keeps its progress for a resume (`keep`, when it has any) or discards
  // it (unpinned).
  void drop_in(key k, const std::string& why, bool keep);
  void discard_in(std::map<key, std::unique_ptr<incoming>>::iterator it);
  void trim_kept();
  void arm_sweep();
  void sweep();

  raft::executor& ex_;
  ports ports_;
  options opts_;
  std::uint64_t next_id_;
  std::map<key, std::unique_ptr<outgoing>> out_;
  std::map<key, std::unique_ptr<incoming>> in_;  // in progress, or kept for a resume
  struct delivered_pins {
    std::uint32_t group;
    std::uint64_t pin;
    std::int64_t since_ms;
  };
  std::vector<delivered_pins> delivered_;  // handed to libraft, pinned until the group restored
  snapshot_transfer_stats stats_;
  raft::executor::timer_id sweep_timer_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica

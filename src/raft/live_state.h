// live_state: what the node log's records mean for one group, in the two forms the log needs.
//
//   * recovering_group: the full state (entries included) rebuilt from the segments at open. Entries are
//     kept by index rather than as one run, because a `carry` record may bring back entries below ones
//     read before it (they were copied forward out of a segment since deleted); the entries must form one
//     run again at the end, or the log is corrupt.
//   * live_group: the log's running account of what each group still needs on disk (term, vote, next
//     index, latest snapshot, and where its live entries sit), kept without the entries' bytes. It says
//     which segments still hold live entries and writes a segment's preamble.
//
// Both apply a record the same way (docs/replication-formats.md, "Node log"). Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "base/result.h"
#include "raft/log_record.h"
#include "raft/types.h"

namespace weir::raft {

// One stored entry as recovered from the log.
struct stored_entry {
  term_id term;
  std::uint8_t type = 0;
  std::vector<std::byte> data;
};

struct stored_snapshot {
  log_index index;
  term_id term;
  log_index conf_index;
  std::vector<std::byte> conf;  // wire::encode_servers bytes
  std::vector<std::byte> data;
};

// Where an entry's bytes sit on disk: segment number (never 0: the version-1 file `<path>` read as
// segment 0 gives no places), the file offset of the record holding it (its 8-byte length+CRC header),
// and the offset of the entry's first data byte from the start of that record's body (the byte after
// the 8-byte header). record_offset + 8 + data_offset is the file offset of the data. (Declared here
// rather than in node_log.h because group_state holds them.)
struct entry_place {
  std::uint32_t segment = 0;
  std::uint64_t record_offset = 0;
  std::uint32_t data_offset = 0;

  friend bool operator==(const entry_place&, const entry_place&) = default;
};

// The offsets from an entries or carry record's body start (log_record.h) of its items' data, one after
// the other: the body's header (u8 type, u32 group, u64 first, u32 n), then per item u64 term, u8 type,
// u32 length, bytes.
class item_data_offsets {
 public:
  // The offset of the next item's data, which is `size` bytes long.
  std::uint32_t next(std::size_t size) {
    const std::uint32_t at = end_ + item_header;
    end_ = at + static_cast<std::uint32_t>(size);
    return at;
  }

 private:
  static constexpr std::uint32_t body_header = 1 + 4 + 8 + 4;
  static constexpr std::uint32_t item_header = 8 + 1 + 4;
  std::uint32_t end_ = body_header;
};

// What the log says about one group.
struct group_state {
  term_id term;
  node_id vote;
  std::optional<stored_snapshot> snapshot;
  log_index start{1};  // index of entries[0]
  std::vector<stored_entry> entries;
  // Where each of `entries` was found (same length; an entry of segment 0 has a default place).
  std::vector<entry_place> places;

  log_index next_index() const { return log_index(start.value() + entries.size()); }
};

inline constexpr std::uint32_t no_segment = ~0u;

// Consecutive live entries of a group written together: by batch `batch` (their segment is known once
// the batch is flushed) or found in segment `seg` at recovery.
struct entry_run {
  log_index first;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;  // encoded size; prorated when a run is cut
  std::uint64_t batch = 0;
  std::uint32_t seg = no_segment;

  log_index end() const { return log_index(first.value() + count); }
};

// Encoded size of one entry in an entries or carry record, and of such a record without its entries.
std::uint64_t entry_bytes(std::size_t data_size);
inline constexpr std::uint64_t items_record_overhead = record::record_header_size + 5 + 12;

// A group's registers as the node log's records set them: term, vote, next index, latest snapshot and
// the entries it keeps below itself. What live_group and recovering_group both track.
class group_registers {
 protected:
  void apply_register(const record::term& r) {
    term_ = r.value;
    vote_ = node_id(0);
  }
  void apply_register(const record::vote& r) { vote_ = r.value; }
  void apply_register(const record::state& r);

  term_id term_;
  node_id vote_;
  log_index next_{1};
  std::optional<stored_snapshot> snapshot_;
  std::uint32_t trailing_ = 0;
};

class live_group : private group_registers {
 public:
  // Applies a record added to the log in batch `batch`.
  void apply(const record::body& r, std::uint64_t batch);
  // The entries [first, first + count) now sit in run `r` (recovery; a carry record).
  void place(entry_run r);

  // The preamble record of this group; views into *this.
  record::state state_record(std::vector<wire::server>& conf_scratch) const;
  // Bytes this group needs on disk: its preamble and its live entries (an estimate). O(1).
  std::uint64_t live_bytes() const;

  const std::deque<entry_run>& runs() const { return runs_; }
  log_index next() const { return next_; }

  // Recovery sets the registers directly.
  void set_registers(term_id t, node_id v, log_index next, std::optional<stored_snapshot> s,
                     std::uint32_t trailing);

 private:
  friend class recovering_group;
  void cut_from(log_index i);
  void drop_below(log_index i);
  void push_run(const entry_run& r);
  void clear_runs();

  std::deque<entry_run> runs_;
  std::uint64_t run_bytes_ = 0;  // sum of runs_[i].bytes
};

class recovering_group : private group_registers {
 public:
  // Applies a record read from segment `seg` at file offset `offset`.
  void apply(const record::body& r, std::uint32_t seg, std::uint64_t offset);
  // The recovered state and the live account of it; corruption if the entries do not form one run ending
  // just below the next index.
  result<std::pair<group_state, live_group>> finish() &&;

 private:
  struct located {
    stored_entry e;
    std::uint32_t seg = no_segment;
    entry_place place;
  };
  std::map<std::uint64_t, located> entries_;
};

}  // namespace weir::raft

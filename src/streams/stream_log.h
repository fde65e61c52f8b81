// stream_log: where one stream's bytes live. The state machine talks to this small interface only.
//
// A fork's log holds only its own records: the records before its fork point are read, when a read
// reaches them, from its source's log (and from the source's source, for a chain of forks), which it
// references by pointer and fork point ("pointer-based stitching", PROTOCOL.md 4.2). A fork therefore
// costs memory in proportion to its own records, not to its source's.
//
// Owned by the stream's owner core. The owner is the only writer (append, set_location, drop_bytes,
// take_records) and reads its own records without locking; a fork on another core reads its source's
// records through the same object, so every write and every read of another log's records (the
// inherited part of a read) holds that log's mutex, briefly (no lock is held while another is taken).
// The chunks a read hands out are immutable and may be passed to other cores. A record may be cold
// (chunk_slice::buf null, its bytes on disk at chunk_slice::at): reads hand out its slices like those of
// hot records, and the caller fetches the bytes of cold slices from the log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "streams/types.h"

namespace weir::streams {

class stream_log {
 public:
  virtual ~stream_log() = default;

  virtual stream_offset tail() const = 0;
  virtual void append(record r) = 0;

  // Data from `from` up to at most `max_bytes` (at least one record when whole_records and one fits
  // nowhere else), inherited records first. whole_records: never split a record (JSON streams keep
  // message boundaries).
  virtual read_plan read(stream_offset from, std::size_t max_bytes, bool whole_records) const = 0;

  // The record that begins exactly at `at` as this stream sees it (an inherited record that crosses a
  // fork point is cut there), or nothing.
  virtual std::optional<record> record_at(stream_offset at) const = 0;

  // True when `at` is a record boundary (or the tail, or a fork point).
  virtual bool is_boundary(stream_offset at) const = 0;

  // The own record ending exactly at `end` is on disk at `at` (the hot tier may drop its bytes later).
  // False if there is no such record.
  virtual bool set_location(std::uint64_t end, const disk_location& at) = 0;
  // Drops the bytes of the own record ending at `end` if its location is known; returns the bytes
  // released (0 if absent, not located or already cold).
  virtual std::size_t drop_bytes(std::uint64_t end) = 0;

  // Calls `fn` with every own record (a fork's inherited records are its source's), in position order.
  virtual void for_each_record(const std::function<void(const record&)>& fn) const = 0;
};

// The in-memory implementation: the own records, ordered by position, and for a fork the source's log
// and the fork point.
class memory_log final : public stream_log {
 public:
  memory_log() = default;
  // A fork's log: positions before `base` (the fork point) read from `source`. `source` may be null
  // (a fork replayed from the log or restored from a checkpoint: link_source gives it later); until
  // then reads skip from the start to `base`.
  memory_log(std::shared_ptr<const memory_log> source, stream_offset base);
  ~memory_log() override;
  memory_log(const memory_log&) = delete;
  memory_log& operator=(const memory_log&) = delete;

  stream_offset tail() const override;
  void append(record r) override;
  read_plan read(stream_offset from, std::size_t max_bytes, bool whole_records) const override;
  std::optional<record> record_at(stream_offset at) const override;
  bool is_boundary(stream_offset at) const override;
  bool set_location(std::uint64_t end, const disk_location& at) override;
  std::size_t drop_bytes(std::uint64_t end) override;
  void for_each_record(const std::function<void(const record&)>& fn) const override;
  // Calls `fn` with each own record that begins in [from, until), in position order. Owner core only.
  void for_each_record_in(stream_offset from, stream_offset until,
                          const std::function<void(const record&)>& fn) const;

  // From any thread (a checkpoint's encoder, state_machine::snapshot_cut): calls `fn` with the own
  // records [first, first + count) under the log's lock, unless records left its front since
  // front_cuts() was `cuts` (then false, and `fn` is not called). The owner only appends after them or
  // changes their places and bytes meanwhile, under the same lock.
  bool visit_records(std::uint64_t cuts, std::size_t first, std::size_t count,
                     const std::function<void(const record&)>& fn) const;
  // How many times records left the front of this log (forget_before, take_records): what makes a
  // record's index in it change. Owner core only.
  std::uint64_t front_cuts() const { return front_cuts_; }

  // The log that holds position `pos` of this stream (this or an ancestor, whose own bytes they are) and
  // the position where this stream stops seeing it (the lowest fork point on the way; `limit` going in).
  const memory_log* holder_of(std::uint64_t pos, std::uint64_t& limit) const;
  // The fork point (0 for a stream that is not a fork) and the source's log (null when not a fork or
  // not linked yet).
  stream_offset base() const { return stream_offset(base_); }
  const std::shared_ptr<const memory_log>& source() const { return source_; }
  // Gives an unlinked fork its source. Only before the log is shared with other cores (start-up, or a
  // state being rebuilt).
  void link_source(std::shared_ptr<const memory_log> source);
  // Replaces the own records by those of `fresh`, the same stream incarnation rebuilt from the log
  // (after a failed log write), keeping this object: forks on other cores point at it.
  void take_records(memory_log& fresh);
  // How many records this log holds itself (what the stream costs in memory; a fork's inherited records
  // are not counted: they are its source's).
  std::size_t record_count() const { return records_.size(); }

  // The cold tier (docs/cold-tier.md, "Reclaiming"): own bytes before held_from() are held only in
  // objects of the bucket; a read that starts there returns read_plan::in_objects (at most max_bytes of
  // them) and nothing else.
  // held_from() is the fork point (0) until forget_before moves it.
  stream_offset held_from() const { return stream_offset(held_from_); }
  // Forgets the own records ending at or before `pos` (their bytes are in objects): held_from() moves to
  // the end of the last of them. Returns the bytes forgotten.
  std::uint64_t forget_before(stream_offset pos);
  // The segment of the first own record when its place is known (what keeps the oldest segment on disk);
  // 0 for records restored with their bytes inline (in memory only, older than any segment).
  std::optional<std::uint64_t> first_segment() const;
  // The end of the last own record in segment `segment` or an older one (a stream's records sit in its
  // log in order, so they are a prefix; records restored inline count as segment 0); held_from() when
  // there is none.
  stream_offset end_through_segment(std::uint64_t segment) const;
  // Restore: a log whose own bytes before `pos` are in objects. Only while it holds no record.
  void set_held_from(stream_offset pos);
  // The stream's path, for the in_objects of a read that reaches this log through a fork.
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& name() const { return name_; }

 private:
  // Index of the first own record whose end is after `pos`.
  std::size_t first_ending_after(std::uint64_t pos) const;
  // Index of the own record ending exactly at `end`, or records_.size().
  std::size_t find_end(std::uint64_t end);
  // Adds own records covering [pos, limit) to `plan` (see read); returns the position reached. Sets
  // `full` when max_bytes stopped it. The caller holds mu_ unless it is the owner.
  std::uint64_t read_own(std::uint64_t pos, std::uint64_t limit, std::size_t max_bytes, bool whole_records,
                         read_plan& plan, bool& full) const;
  mutable std::mutex mu_;  // guards records_ against other cores' reads (the owner writes under it)
  std::vector<record> records_;
  std::uint64_t base_ = 0;
  std::uint64_t held_from_ = 0;  // own bytes before it are only in objects (base_ unless forgotten)
  std::string name_;
  std::shared_ptr<const memory_log> source_;
  std::uint64_t front_cuts_ = 0;  // written under mu_
  std::size_t next_hint_ = 0;     // just after the record find_end last found (the hot tier evicts in order)
};

}  // namespace weir::streams

// uploader: packs sealed stream bytes of one group into cold objects and uploads them (docs/cold-tier.md,
// "Uploading"). The group's leader (or a single node's shard) hands it each stream's bytes that are on its
// own disk and not yet in an object; it cuts them into objects of about target_object_bytes (several
// streams per object, or a lone slow stream after max_age), names each object by epoch, group, the
// leader's term and a sequence, PUTs it and, once the store has it, reports it so that the caller can
// record where those ranges live (through the group's log) before any local copy may go.
//
// The rules it keeps:
//   * a key is never written with other bytes: a failed upload is retried later with the same key and the
//     same bytes, for as long as it takes (appends go on meanwhile; the caller bounds the bytes waiting);
//   * objects are reported in sequence order, each once, so that a stream's cold ranges are recorded in
//     the order of its offsets (a slow object holds back the ones after it);
//   * nothing is ever deleted here: an object whose report is lost (the leader stepped down, the node
//     stopped) is an orphan for the sweep to find.
//
// Runs on its executor's thread (add, flush, timers and put completions); the put function must run the
// request elsewhere (object_store_workers) and deliver `done` on that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "raft/executor.h"
#include "tier/object_format.h"
#include "tier/object_key.h"
#include "tier/object_store.h"

namespace weir::tier {

struct uploader_options {
  cold_epoch epoch{1};
  cold_group group{0};
  leader_term term{0};
  upload_seq first_seq{0};  // the sequence of the first object (a new term starts at 0)
  std::uint64_t target_object_bytes = 8u << 20;
  std::chrono::milliseconds max_age{30'000};  // an object's oldest bytes wait at most this long
  std::uint32_t block_size = default_object_block_size;
  // Between attempts of one object after the store gave up on it (retrying_object_store retries
  // inside one call): doubled each time up to retry_max.
  std::chrono::milliseconds retry_base{1'000};
  std::chrono::milliseconds retry_max{60'000};
};

// One object in the store, as its index record names it.
struct uploaded_object {
  std::string key;  // relative to the cold location's prefix
  object_name name;
  std::uint64_t size = 0;
  std::vector<object_range> ranges;
};

class uploader {
 public:
  using put_done = std::function<void(store_result<object_info>)>;
  using put_fn = std::function<void(std::string key, shared_object_bytes bytes, put_done done)>;
  using uploaded_fn = std::function<void(const uploaded_object&)>;

  uploader(raft::executor& ex, uploader_options o, put_fn put, uploaded_fn uploaded);
  ~uploader();
  uploader(const uploader&) = delete;
  uploader& operator=(const uploader&) = delete;

  // A stream's bytes for offsets [first, end), sealed on local disk. Ranges of one stream come in offset
  // order; an object cut here is sent at once. A range is cut at the object's end unless `whole` (records
  // of a JSON stream, whose reads from the bucket must end at a message boundary: cold-tier.md, "JSON
  // streams"): then the object being filled is sent first when the range does not fit, and a range
  // larger than the target goes alone into an object (cut only beyond max_whole_bytes).
  // `records`: the records that begin in these bytes, in offset order, for the objects' record tables
  // (object_format.h); a range cut at an object's end takes those that begin in its part.
  void add(std::string_view stream, streams::stream_offset first, streams::stream_offset end,
           std::span<const std::byte> bytes, bool whole = false, std::span<const object_record> records = {});
  // The largest range add() keeps whole: an object's largest PUT less room for its header, footer and
  // block checksums; more than the largest record (uploader.cc), so a JSON record is never cut.
  static constexpr std::uint64_t max_whole_bytes = object_store::max_object_bytes - (1u << 20);
  // Sends the object being filled now, however small (shutdown, a test).
  void flush();
  // The leader stepped down or the node stops: no more puts, timers or reports. Objects already sent
  // may still land in the store (orphans for the sweep).
  void stop();

  // Data bytes added and not yet reported.
  std::uint64_t bytes_waiting() const { return bytes_waiting_; }
  std::size_t objects_in_flight() const { return pending_.size(); }
  std::uint64_t attempts_failed() const { return attempts_failed_; }
  // The last failure ("" once an upload succeeds after it).
  const std::string& last_error() const { return last_error_; }
  upload_seq next_seq() const { return next_seq_; }
  // Every object of a lower sequence has been reported (reports go in sequence order, each once): the
  // orphan sweep's settled sequence. The objects sent and not yet reported start here.
  upload_seq first_unreported() const {
    return pending_.empty() ? next_seq_ : upload_seq(pending_.begin()->first);
  }

 private:
  struct pending {
    uploaded_object object;
    std::shared_ptr<object_bytes> bytes;  // shared with the put in flight, never copied
    std::uint64_t data_bytes = 0;
    bool landed = false;
    bool recycle = false;  // sealed full (not by age): its buffer may take the group's next object
    std::chrono::milliseconds next_delay{0};
    raft::executor::timer_id retry_timer = 0;
  };

  void seal(bool full);
  void send(std::uint64_t seq);
  void on_put(std::uint64_t seq, store_result<object_info> r);
  void retry_later(std::uint64_t seq, const std::string& why);
  void report_landed();

  raft::executor& ex_;
  uploader_options o_;
  put_fn put_;
  uploaded_fn uploaded_;
  std::optional<object_writer> filling_;
  // The buffer of the last full object the store took, for the next object: a busy group writes each
  // object into memory already touched (no page faults, no zeroed pages) rather than a fresh allocation.
  // At most one per uploader; objects sealed by age (a slow group) are not kept.
  object_bytes spare_;
  raft::executor::timer_id age_timer_ = 0;
  upload_seq next_seq_;
  std::map<std::uint64_t, pending> pending_;  // by sequence: sent, not yet reported
  std::uint64_t bytes_waiting_ = 0;
  std::uint64_t attempts_failed_ = 0;
  std::string last_error_;
  bool stopped_ = false;
  // Completions of puts sent before stop() or destruction find this false and do nothing.
  std::shared_ptr<bool> alive_;
};

}  // namespace weir::tier

// subscription_log: subscriptions persist as an append-only log of changes (so that a stream creation
// costs O(1) bytes, never a whole-file rewrite), compacted now and then into a fresh log holding only
// the live state. Format (docs/subscriptions.md "Persistence"): a sequence of records
//
//   u32 little-endian payload length | u32 little-endian CRC32C of the payload | payload (JSON object)
//
// with payload "op" one of: "sub" (a subscription's config and identity), "state" (its counters), "link"
// (one link's flags and cursor), "unlink" (one link gone), "del" (the subscription deleted). Replaying the
// records in order gives the state. A record cut short or failing its CRC ends the log: it is the torn
// tail of a write a crash interrupted, and is cut off when the log is opened.
//
// The encoders and replay are pure. `subscription_journal` owns the file: it appends batches and writes
// compactions on its own thread (the home loop never waits for the disk), through a storage::env so
// tests use mem_env. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/result.h"
#include "storage/env.h"
#include "subscriptions/subscription_store.h"

namespace weir::subscriptions {

// The key of a subscription in the log: root + id (as in the manager).
inline std::string subscription_key(const persisted_subscription& s) {
  return s.root + s.id;
}

// One framed record around `payload`.
void append_record(std::string& out, std::string_view payload);

// Record payloads (JSON objects).
std::string sub_record(const persisted_subscription& s);  // identity, config, created_at (no links)
std::string state_record(std::string_view key, std::uint64_t generation, bool failed, int failed_attempts,
                         std::int64_t retry_at_wall_ms, bool paused);
std::string link_record(std::string_view key, std::string_view path, const stream_link& l);
std::string unlink_record(std::string_view key, std::string_view path);
std::string delete_record(std::string_view key);

// The whole state as records (a compaction's content).
std::string encode_image(const std::vector<persisted_subscription>& subs);

struct replayed_log {
  std::vector<persisted_subscription> subs;
  std::uint64_t valid_bytes = 0;    // length of the prefix made of whole, intact records
  std::uint64_t dropped_bytes = 0;  // after it: the torn tail
};

// Replays a log. A torn tail is not an error (see above); a record that is intact but does not make sense
// (unknown op, a change to an unknown subscription, an invalid config) is corruption and is.
result<replayed_log> replay_log(std::span<const std::byte> bytes);

// Applies records to `subs` in order, as replay does. The bytes came whole from elsewhere (a cluster's
// replicated entry, subscription_replica): a record cut short or failing its CRC is an error, as is one
// that does not make sense. On error the records before the bad one stay applied.
status apply_records(std::map<std::string, persisted_subscription>& subs, std::span<const std::byte> bytes);

// One batch for the journal, in the manager's order: records to append, or a compaction image that
// replaces the whole log.
struct journal_batch {
  bool rewrite = false;
  std::string bytes;
};

class subscription_journal {
 public:
  // Opens the log at `path` (creating it when missing), replays it into `restored` and cuts a torn tail.
  static result<std::unique_ptr<subscription_journal>> open(storage::env& env, std::string path,
                                                            std::vector<persisted_subscription>& restored);
  ~subscription_journal();
  subscription_journal(const subscription_journal&) = delete;
  subscription_journal& operator=(const subscription_journal&) = delete;

  // Queues a batch (appended and synced, or the compaction written to a temporary file, synced and
  // renamed over the log). Batches are applied in order.
  void submit(journal_batch b);
  // Waits until every batch submitted so far is on disk (or failed; failures are logged).
  void flush();
  // Writes what is queued, then stops the thread. Idempotent; later batches are dropped.
  void close();

 private:
  subscription_journal(storage::env& env, std::string path, std::unique_ptr<storage::writable_file> file);
  void run();
  status apply(const journal_batch& b);

  storage::env& env_;
  std::string path_;
  std::unique_ptr<storage::writable_file> file_;  // only the thread touches it after open()
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<journal_batch> queue_;
  std::uint64_t submitted_ = 0;
  std::uint64_t done_ = 0;
  bool closing_ = false;
  bool stopped_ = false;  // the thread has finished
  std::thread thread_;
};

}  // namespace weir::subscriptions

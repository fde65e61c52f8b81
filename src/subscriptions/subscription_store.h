// subscription_store: subscriptions survive restarts. The manager renders every subscription (config,
// links and cursors, generation, retry schedule) into one JSON snapshot; `snapshot_writer` writes the
// latest snapshot to <data_dir>/subscriptions.json on its own thread (temporary file, fsync, rename), so
// the home loop never blocks on disk. Wakes, leases and tokens are not persisted: after a restart the
// token secret is new, so every in-flight wake is void anyway and pending work is simply woken again.
// Encoding and decoding are pure; snapshot_writer is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/result.h"
#include "subscriptions/subscription_config.h"
#include "subscriptions/subscription_state.h"

namespace weir::subscriptions {

enum class store_errc { io = 1, corrupt };

struct persisted_subscription {
  std::string root;
  std::string origin;
  std::string id;
  subscription_config config;
  std::int64_t created_at_wall_ms = 0;
  std::map<std::string, stream_link> links;
  std::uint64_t generation = 0;
  bool failed = false;
  int failed_attempts = 0;
  std::int64_t retry_at_wall_ms = 0;  // 0 = no retry scheduled (PROTOCOL.md 7.1: next_attempt_at)
};

std::string encode_snapshot(const std::vector<persisted_subscription>& subs);
result<std::vector<persisted_subscription>> decode_snapshot(std::string_view text);

// nullopt when the file does not exist.
result<std::optional<std::string>> read_snapshot_file(const std::string& path);
status write_snapshot_file(const std::string& path, std::string_view text);

class snapshot_writer {
 public:
  explicit snapshot_writer(std::string path);
  ~snapshot_writer();
  snapshot_writer(const snapshot_writer&) = delete;
  snapshot_writer& operator=(const snapshot_writer&) = delete;

  // Queues `text`; a snapshot not yet written is replaced (the latest wins).
  void write(std::string text);
  // Writes what is queued, then stops the thread. Idempotent.
  void close();

 private:
  void run();

  std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::string> pending_;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace weir::subscriptions

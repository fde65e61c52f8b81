// mem_object_store: an in-memory object_store for unit tests and the cluster simulation, with the faults
// an S3 client must survive (in the manner of storage::mem_env):
//   * an answer with any error (503 SlowDown, 500, 403, 412, 409, ...) instead of doing the request;
//   * timeouts and connection resets, before the request is applied or after it (the ambiguous upload:
//     the object landed but the client never heard so);
//   * stalls: a request that blocks until the test releases it (a slow S3 that must not block a loop);
//   * partial and corrupt reads: a GET that returns fewer bytes than asked, or a flipped byte.
// Faults are queued per operation (inject) or drawn at random with a seeded generator (set_random_faults):
// for a given seed and a given order of calls, the same faults hit the same calls.
//
// It behaves as S3 does where s3rver does not (If-None-Match: * answers 412, suffix ranges are never
// needed), so what s3rver cannot check is tested here (docs/cold-tier.md, "What the test server cannot
// check"). Thread-safe; a stalled call waits without holding the lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tier/object_store.h"

namespace weir::tier {

enum class store_op { put = 0, get, head, list, remove };
constexpr int store_op_count = 5;

enum class fault_kind {
  error,                // answer `error` without applying the request
  timeout,              // no answer, not applied
  timeout_after_apply,  // applied, then no answer
  reset,                // connection reset, not applied
  reset_after_apply,    // applied, then reset
  stall,                // blocks until release_stalls(), then runs normally
  short_read,           // get: a success with the first half of the bytes only
  corrupt_read,         // get: a success with one byte flipped
};

struct injected_fault {
  store_op op = store_op::put;
  fault_kind kind = fault_kind::error;
  store_error error;       // for fault_kind::error
  std::string key_prefix;  // hits only keys (list: prefixes) starting with this; empty: any
};

class mem_object_store final : public object_store {
 public:
  mem_object_store() = default;

  store_result<object_info> put(const std::string& key, std::span<const std::byte> bytes,
                                put_options options = {}) override;
  store_result<range_read> get_range(const std::string& key, std::uint64_t offset,
                                     std::uint64_t length) override;
  store_result<object_info> head(const std::string& key) override;
  store_result<list_page> list(const std::string& prefix, const std::string& continuation,
                               int max_keys = max_list_keys) override;
  store_result<store_done> remove(const std::string& key) override;

  // Fault injection.
  // The next `times` calls of f.op (on matching keys) meet the fault.
  void inject(injected_fault f, int times = 1);
  // Each call (after queued faults) fails with probability `p` with a retryable fault drawn from: 503
  // SlowDown, 500 InternalError, timeout, reset, timeout and reset after apply. p = 0 turns it off.
  void set_random_faults(double p, std::uint64_t seed);
  // Lets every stalled call (and those that stall later, until the next inject of a stall) proceed.
  void release_stalls();
  // Blocks until at least n calls are stalled (a test waits for this event, never for a sleep).
  void wait_for_stalled(int n);
  void clear_faults();

  // Observation and corruption, for tests.
  std::uint64_t requests(store_op op) const;
  std::uint64_t faults_hit() const;
  std::optional<object_bytes> contents(const std::string& key) const;
  void set_contents(const std::string& key, object_bytes bytes);
  std::vector<std::string> keys() const;

 private:
  struct stored {
    object_bytes bytes;
    std::string etag;
  };
  // The fault for this call, if any (lock held).
  std::optional<injected_fault> take_fault(std::unique_lock<std::mutex>& lock, store_op op,
                                           const std::string& key);
  static std::string etag_of(std::span<const std::byte> bytes);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, stored> objects_;
  std::deque<std::pair<injected_fault, int>> queued_;
  double random_p_ = 0;
  std::mt19937_64 rng_{0};
  bool release_ = false;
  int stalled_ = 0;
  std::uint64_t requests_[store_op_count] = {};
  std::uint64_t faults_hit_ = 0;
};

}  // namespace weir::tier

// retrying_object_store: an object_store decorator that retries what a retry may cure (503 SlowDown and
// 429, other 5xx, timeouts, resets: is_retryable) with exponential backoff and full jitter, a bounded
// number of attempts, and never anything else (a 4xx would get the same answer).
//
// A retried PUT re-sends the same bytes under the same key, which is safe because a key is never written
// with other bytes (object_key.h). After an ambiguous attempt (timeout, reset, 5xx) a PUT with if_absent
// may meet its own earlier write as 412: the error then says attempts > 1, and the caller compares the
// object (head/get) instead of concluding that someone else wrote it.
//
// The delays are slept on the calling thread (an object_store worker, never a loop), through an
// injectable sleeper so that tests record the delays instead of waiting them out. cancel() wakes a
// sleeping retry and stops further attempts (shutdown). Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>

#include "base/clock.h"
#include "tier/object_store.h"

namespace weir::tier {

struct retry_policy {
  int max_attempts = 6;      // requests per call, the first included
  millis base_delay{100};    // the cap of the first retry's delay
  millis max_delay{10'000};  // the cap of any delay
  // A throttled answer (SlowDown) asks for a slower rate: its delay cap starts this many times higher.
  int throttled_factor = 4;
};

// The delay before retry number `retry` (1 for the first retry): uniform in [0, min(max_delay, base_delay
// * 2^(retry-1)) * (throttled ? throttled_factor : 1)] ("full jitter": clients that failed together do not
// retry together).
millis backoff_delay(const retry_policy& p, int retry, bool throttled, std::mt19937_64& rng);

class retrying_object_store final : public object_store {
 public:
  using sleeper = std::function<void(millis)>;

  // `inner` must outlive this. `sleep`: null for a real (cancellable) sleep.
  retrying_object_store(object_store& inner, retry_policy policy, std::uint64_t seed,
                        sleeper sleep = nullptr);

  store_result<object_info> put(const std::string& key, std::span<const std::byte> bytes,
                                put_options options = {}) override;
  store_result<range_read> get_range(const std::string& key, std::uint64_t offset,
                                     std::uint64_t length) override;
  store_result<object_info> head(const std::string& key) override;
  store_result<list_page> list(const std::string& prefix, const std::string& continuation,
                               int max_keys = max_list_keys) override;
  store_result<store_done> remove(const std::string& key) override;

  // Stops retrying: sleeping calls wake and return their last error; later calls make one attempt.
  void cancel();
  std::uint64_t retries() const { return retries_.load(std::memory_order_relaxed); }

 private:
  template <class T>
  store_result<T> run(const std::function<store_result<T>()>& attempt);
  // False when cancelled during the sleep.
  bool pause(millis d);

  object_store& inner_;
  retry_policy policy_;
  sleeper sleep_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::mt19937_64 rng_;
  bool cancelled_ = false;
  std::atomic<std::uint64_t> retries_{0};
};

}  // namespace weir::tier

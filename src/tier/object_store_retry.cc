#include "tier/object_store_retry.h"

#include <algorithm>

namespace weir::tier {

millis backoff_delay(const retry_policy& p, int retry, bool throttled, std::mt19937_64& rng) {
  std::int64_t cap = p.base_delay.count();
  for (int i = 1; i < retry && cap < p.max_delay.count(); ++i) cap *= 2;
  if (throttled) cap *= std::max(1, p.throttled_factor);
  cap = std::min<std::int64_t>(cap, p.max_delay.count());
  if (cap <= 0) return millis{0};
  return millis{std::uniform_int_distribution<std::int64_t>(0, cap)(rng)};
}

retrying_object_store::retrying_object_store(object_store& inner, retry_policy policy, std::uint64_t seed,
                                             sleeper sleep)
    : inner_(inner), policy_(policy), sleep_(std::move(sleep)), rng_(seed) {}

void retrying_object_store::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  cv_.notify_all();
}

bool retrying_object_store::pause(millis d) {
  if (sleep_) {
    sleep_(d);
    std::lock_guard lock(mu_);
    return !cancelled_;
  }
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [this] { return cancelled_; });
  return !cancelled_;
}

template <class T>
store_result<T> retrying_object_store::run(const std::function<store_result<T>()>& attempt) {
  for (int n = 1;; ++n) {
    store_result<T> r = attempt();
    if (r) return r;
    r.err().attempts = n;
    if (!is_retryable(r.err().kind) || n >= policy_.max_attempts) return r;
    millis d{0};
    {
      std::lock_guard lock(mu_);
      if (cancelled_) return r;
      d = backoff_delay(policy_, n, r.err().kind == store_errc::throttled, rng_);
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    if (!pause(d)) return r;
  }
}

store_result<object_info> retrying_object_store::put(const std::string& key, std::span<const std::byte> bytes,
                                                     put_options options) {
  return run<object_info>([&] { return inner_.put(key, bytes, options); });
}

store_result<range_read> retrying_object_store::get_range(const std::string& key, std::uint64_t offset,
                                                          std::uint64_t length) {
  return run<range_read>([&] { return inner_.get_range(key, offset, length); });
}

store_result<object_info> retrying_object_store::head(const std::string& key) {
  return run<object_info>([&] { return inner_.head(key); });
}

store_result<list_page> retrying_object_store::list(const std::string& prefix,
                                                    const std::string& continuation, int max_keys) {
  return run<list_page>([&] { return inner_.list(prefix, continuation, max_keys); });
}

store_result<store_done> retrying_object_store::remove(const std::string& key) {
  return run<store_done>([&] { return inner_.remove(key); });
}

}  // namespace weir::tier

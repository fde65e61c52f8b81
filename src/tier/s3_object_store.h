// s3_object_store: the object_store over S3's REST API (PutObject, GetObject with Range, HeadObject,
// ListObjectsV2, DeleteObject), with libcurl as the transport and weir's own SigV4 signer (s3_signer.h).
//
// Each call is one request on a libcurl easy handle taken from a small pool and returned after it: the
// handle keeps its connection alive, so consecutive calls from a worker reuse one connection. Every
// request is bounded: a connect timeout, a low-speed limit (a stalled transfer fails instead of hanging)
// and an overall timeout. Answers map to store_errc in one place (classify_s3_answer); retries are the
// business of retrying_object_store, which wraps this one.
//
// Blocking and thread-safe: called by object_store_workers' threads (never an event loop). The pool holds
// at most as many handles as calls ever ran at once. Credentials are never logged or put in an error.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "tier/cold_location.h"
#include "tier/object_store.h"

namespace weir::tier {

struct s3_client_options {
  millis connect_timeout{3'000};
  // A transfer slower than low_speed_bytes per second for low_speed_time fails (as a timeout).
  long low_speed_bytes = 16 * 1024;
  millis low_speed_time{10'000};
  // The cap of one whole request (an 8 MiB PUT at the low-speed floor would take longer: the floor is
  // for stalls, this cap for everything else).
  millis request_timeout{120'000};
  // Source of x-amz-date (S3 refuses a date 15 minutes off).
  const clock_source* clock = nullptr;  // null: the system clock
};

// Latency of each request (one attempt), in microseconds, and the answers by kind.
struct s3_store_metrics {
  s3_store_metrics();
  metrics::histogram put_latency_us;  // PUT
  metrics::histogram get_latency_us;  // GET (ranges)
  metrics::counter requests;          // every request (the _shared writers: several workers)
  metrics::counter failures;          // requests that did not succeed
};

// Maps one HTTP answer (status and, when it has one, the S3 <Error> body) to a store_errc.
store_errc classify_s3_answer(int http_status, const std::string& s3_code);

class s3_object_store final : public object_store {
 public:
  explicit s3_object_store(s3_settings settings, s3_client_options options = {});
  ~s3_object_store() override;
  s3_object_store(const s3_object_store&) = delete;
  s3_object_store& operator=(const s3_object_store&) = delete;

  store_result<object_info> put(const std::string& key, std::span<const std::byte> bytes,
                                put_options options = {}) override;
  store_result<range_read> get_range(const std::string& key, std::uint64_t offset,
                                     std::uint64_t length) override;
  store_result<object_info> head(const std::string& key) override;
  store_result<list_page> list(const std::string& prefix, const std::string& continuation,
                               int max_keys = max_list_keys) override;
  store_result<store_done> remove(const std::string& key) override;

  // Aborts transfers in flight (they fail as `connection`) and every later one: shutdown.
  void cancel() { cancelled_.store(true); }
  const s3_store_metrics& metrics() const { return metrics_; }
  const s3_settings& settings() const { return settings_; }

  struct answer;  // one HTTP exchange's result (s3_object_store.cc)

 private:
  struct request {
    const char* method = "GET";
    std::string key;  // relative; empty: the bucket
    std::vector<std::pair<std::string, std::string>> query;
    std::vector<std::pair<std::string, std::string>> headers;  // signed
    std::span<const std::byte> body;
    bool head = false;
    std::uint64_t expect_bytes = 0;  // a size hint for the body buffer
  };
  store_result<answer> perform(const request& req);
  void* acquire_handle();
  void release_handle(void* h);

  s3_settings settings_;
  s3_client_options options_;
  system_clock_source system_clock_;
  std::mutex pool_mu_;
  std::vector<void*> idle_handles_;
  std::atomic<bool> cancelled_{false};
  s3_store_metrics metrics_;
};

}  // namespace weir::tier

// webhook_sender: POSTs signed webhook notifications (PROTOCOL.md 7.1) off the event loops.
// `webhook_transport` is the interface the subscription_manager uses; `curl_webhook_sender` implements it
// with libcurl on a small pool of dedicated threads (an event loop never blocks on a webhook), and tests
// use a fake. Completion callbacks run on a sender thread: the caller re-posts them to its own loop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "subscriptions/url_validator.h"
#include "subscriptions/webhook_target.h"

namespace weir::subscriptions {

struct webhook_request {
  std::string url;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::int64_t timeout_ms = 10'000;
  // PROTOCOL.md 12.8: the URL is validated again under this policy at send time, its host resolved and
  // every address checked (resolve_webhook_target); the connection goes only to a checked address.
  url_policy policy;
};

struct webhook_result {
  int http_status = 0;            // 0 when no response arrived (connect error, timeout)
  std::string body;               // at most max_response_bytes
  std::string error;              // transport error text when http_status == 0
  std::string connected_address;  // the address the request went to ("" if it never connected)
};

class webhook_transport {
 public:
  virtual ~webhook_transport() = default;
  // Thread-safe. `done` is called exactly once (unless the transport is shut down first), on any thread.
  virtual void send(webhook_request req, std::function<void(webhook_result)> done) = 0;
  // Stops accepting work, abandons queued requests and joins the threads. Idempotent.
  virtual void shutdown() = 0;
};

class curl_webhook_sender final : public webhook_transport {
 public:
  static constexpr std::size_t max_response_bytes = 64 * 1024;

  // `resolver` names the webhook hosts (the system resolver when null).
  explicit curl_webhook_sender(unsigned threads = 2, std::shared_ptr<host_resolver> resolver = nullptr);
  ~curl_webhook_sender() override;

  void send(webhook_request req, std::function<void(webhook_result)> done) override;
  void shutdown() override;

 private:
  struct job {
    webhook_request req;
    std::function<void(webhook_result)> done;
  };
  void run();
  webhook_result perform(void* curl_handle, const webhook_request& req);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<job> queue_;
  bool stopping_ = false;
  std::atomic<bool> abort_{false};  // read by in-flight transfers without the lock
  std::shared_ptr<host_resolver> resolver_;
  std::vector<std::thread> threads_;
};

}  // namespace weir::subscriptions

#include "subscriptions/webhook_sender.h"

#include <curl/curl.h>

#include <algorithm>

#include <fmt/format.h>

#include "base/log.h"
#include "subscriptions/url_validator.h"

namespace weir::subscriptions {
namespace {

struct response_sink {
  std::string body;
  const std::atomic<bool>* stopping = nullptr;
  const std::vector<std::string>* checked = nullptr;  // the addresses resolve_webhook_target allowed
  std::string connected;
  std::string refused;  // why the connected address was refused
};

// CURLOPT_PREREQFUNCTION: runs after the connection is made (or reused), before the request is sent. The
// pinned resolve makes any other address impossible; this is the belt to those braces.
int on_connected(void* user, char* primary_ip, char* /*local_ip*/, int /*primary_port*/, int /*local_port*/) {
  auto* sink = static_cast<response_sink*>(user);
  sink->connected = primary_ip;
  const auto& ok = *sink->checked;
  if (std::find(ok.begin(), ok.end(), sink->connected) != ok.end()) return CURL_PREREQFUNC_OK;
  sink->refused = fmt::format("webhook connection reached {}, which was not the checked address", primary_ip);
  return CURL_PREREQFUNC_ABORT;
}

// Lets shutdown() interrupt a slow request instead of waiting out its timeout.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* sink = static_cast<response_sink*>(user);
  return sink->stopping->load(std::memory_order_relaxed) ? 1 : 0;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<response_sink*>(user);
  std::size_t bytes = size * n;
  std::size_t room = curl_webhook_sender::max_response_bytes - sink->body.size();
  sink->body.append(data, std::min(bytes, room));
  return bytes;  // keep reading (the excess is dropped) so the status is still reported
}

struct curl_global {
  curl_global() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

curl_webhook_sender::curl_webhook_sender(unsigned threads, std::shared_ptr<host_resolver> resolver)
    : resolver_(resolver ? std::move(resolver) : std::make_shared<system_resolver>()) {
  static curl_global once;  // curl_global_init is not thread-safe: do it before any sender thread
  (void)once;
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

curl_webhook_sender::~curl_webhook_sender() {
  shutdown();
}

void curl_webhook_sender::send(webhook_request req, std::function<void(webhook_result)> done) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.push_back(job{std::move(req), std::move(done)});
  }
  cv_.notify_one();
}

void curl_webhook_sender::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    abort_.store(true);
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void curl_webhook_sender::run() {
  // One easy handle per thread, reset between requests: its connection cache keeps connections to a
  // webhook receiver alive across deliveries (no TCP/TLS handshake per wake).
  CURL* h = curl_easy_init();
  for (;;) {
    job j;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      j = std::move(queue_.front());
      queue_.pop_front();
    }
    webhook_result r = perform(h, j.req);
    j.done(std::move(r));
  }
  if (h) curl_easy_cleanup(h);
}

webhook_result curl_webhook_sender::perform(void* handle, const webhook_request& req) {
  webhook_result out;
  CURL* h = static_cast<CURL*>(handle);
  if (!h) {
    out.error = "curl_easy_init failed";
    return out;
  }
  // PROTOCOL.md 12.8: resolve once, check every address, then let curl use exactly those.
  auto target = resolve_webhook_target(req.url, req.policy, *resolver_);
  if (!target) {
    out.error = target.err().reason;
    return out;
  }
  curl_easy_reset(h);  // options only; the connection cache stays
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : req.headers)
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  response_sink sink;
  sink.stopping = &abort_;
  sink.checked = &target->addresses;
  curl_slist* pinned = nullptr;
  if (!target->url.ip_literal) {
    // CURLOPT_RESOLVE "HOST:PORT:ADDR[,ADDR]": curl takes these instead of asking DNS again. It replaces
    // an earlier entry for the same HOST:PORT in the handle's cache.
    std::string entry = fmt::format("{}:{}:", target->url.host, target->port);
    for (std::size_t i = 0; i < target->addresses.size(); ++i) {
      const auto& a = target->addresses[i];
      entry += (i ? "," : "") + (a.find(':') != std::string::npos ? "[" + a + "]" : a);
    }
    pinned = curl_slist_append(pinned, entry.c_str());
  }
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  if (pinned) curl_easy_setopt(h, CURLOPT_RESOLVE, pinned);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  // Every request is bounded in time; signals are not used for timeouts (we are multi-threaded).
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout_ms));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min<std::int64_t>(req.timeout_ms, 5'000)));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // PROTOCOL.md 12.8: a validated URL must not be able to bounce us elsewhere.
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_USERAGENT, "weir-webhook/1");
  curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_connected);
  curl_easy_setopt(h, CURLOPT_PREREQDATA, &sink);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &sink);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  CURLcode rc = curl_easy_perform(h);
  if (rc == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    out.http_status = static_cast<int>(status);
    out.body = std::move(sink.body);
  } else {
    out.error = sink.refused.empty() ? curl_easy_strerror(rc) : sink.refused;
  }
  if (sink.refused.empty()) out.connected_address = std::move(sink.connected);
  curl_slist_free_all(headers);
  curl_slist_free_all(pinned);
  return out;
}

}  // namespace weir::subscriptions

#include "subscriptions/webhook_target.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

namespace weir::subscriptions {
namespace {

error refused(std::string reason) {
  return make_error(url_errc::rejected, std::move(reason));
}

// The canonical text of a numeric address (so "::0001" and "::1" compare equal), or "" if not one.
std::string canonical_address(const std::string& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, ip.c_str(), &a4) == 1) return inet_ntop(AF_INET, &a4, buf, sizeof buf);
  if (inet_pton(AF_INET6, ip.c_str(), &a6) == 1) return inet_ntop(AF_INET6, &a6, buf, sizeof buf);
  return {};
}

}  // namespace

namespace {
result<std::vector<std::string>> lookup(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return refused(fmt::format("cannot resolve webhook host '{}': {}", host, gai_strerror(rc)));
  std::vector<std::string> out;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    const void* src = nullptr;
    if (p->ai_family == AF_INET) src = &reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr;
    if (p->ai_family == AF_INET6) src = &reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr;
    if (src && inet_ntop(p->ai_family, src, buf, sizeof buf)) {
      std::string a(buf);
      if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(std::move(a));
    }
  }
  ::freeaddrinfo(res);
  return out;
}
}  // namespace

result<std::vector<std::string>> system_resolver::resolve(const std::string& host) {
  struct shared {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<result<std::vector<std::string>>> answer;
  };
  auto state = std::make_shared<shared>();
  std::thread([state, host] {
    auto r = lookup(host);
    std::lock_guard lock(state->mu);
    state->answer = std::move(r);
    state->cv.notify_all();
  }).detach();
  std::unique_lock lock(state->mu);
  if (!state->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms_),
                          [&] { return state->answer.has_value(); })) {
    return refused(fmt::format("resolving webhook host '{}' took longer than {} ms", host, timeout_ms_));
  }
  return std::move(*state->answer);
}

result<webhook_target> resolve_webhook_target(std::string_view url, const url_policy& policy,
                                              host_resolver& resolver) {
  auto parsed = validate_webhook_url(url, policy);
  if (!parsed) return parsed.err();
  webhook_target t;
  t.url = std::move(*parsed);
  t.port = t.url.port != 0 ? t.url.port : (t.url.scheme == "https" ? 443 : 80);
  std::vector<std::string> found;
  if (t.url.ip_literal) {
    found.push_back(t.url.host);
  } else {
    auto r = resolver.resolve(t.url.host);
    if (!r) return r.err();
    found = std::move(*r);
  }
  if (found.empty()) return refused(fmt::format("webhook host '{}' has no address", t.url.host));
  address_rule rule = address_rule_for(t.url);
  for (const auto& a : found) {
    std::string c = canonical_address(a);
    if (c.empty()) return refused(fmt::format("webhook host '{}' resolved to '{}'", t.url.host, a));
    if (auto st = validate_webhook_address(c, rule); !st) return st.err();
    t.addresses.push_back(std::move(c));
  }
  return t;
}

}  // namespace weir::subscriptions

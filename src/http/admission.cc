#include "http/admission.h"

#include <sys/resource.h>

#include <algorithm>

namespace weir::http {

admission::admission(std::size_t max_total, std::size_t max_per_client)
    : max_total_(std::max<std::size_t>(1, max_total)), max_per_client_(max_per_client) {}

admission::verdict admission::try_admit(std::uint32_t client) {
  if (total_.fetch_add(1, std::memory_order_relaxed) >= max_total_) {
    total_.fetch_sub(1, std::memory_order_relaxed);
    return verdict::over_total;
  }
  if (max_per_client_ != 0) {
    std::lock_guard lk(mu_);
    std::uint32_t& n = per_client_[client];
    if (n >= max_per_client_) {
      if (n == 0) per_client_.erase(client);
      total_.fetch_sub(1, std::memory_order_relaxed);
      return verdict::over_client;
    }
    ++n;
  }
  return verdict::admit;
}

void admission::release(std::uint32_t client) {
  total_.fetch_sub(1, std::memory_order_relaxed);
  if (max_per_client_ == 0) return;
  std::lock_guard lk(mu_);
  auto it = per_client_.find(client);
  if (it == per_client_.end()) return;
  if (--it->second == 0) per_client_.erase(it);
}

std::size_t raise_descriptor_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? std::size_t{1} << 20 : static_cast<std::size_t>(rl.rlim_cur);
}

std::size_t connection_cap(std::size_t descriptor_limit, std::size_t reserve, std::size_t configured) {
  std::size_t cap = descriptor_limit > reserve ? descriptor_limit - reserve : 1;
  if (configured != 0) cap = std::min(cap, configured);
  return std::max<std::size_t>(1, cap);
}

}  // namespace weir::http

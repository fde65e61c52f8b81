// admission: the node-wide caps on open connections, shared by every core's listener.
//
// A descriptor is a scarce resource shared with the storage layer: sockets must never take the last ones
// (a segment roll that cannot open its file fails every append). So the total is capped below the
// process's RLIMIT_NOFILE by a reserve, and optionally per client address, so that one client cannot
// hold every slot. Thread-safe: any core admits and releases; the per-address table takes a mutex (only
// on accept and close, never per request).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace weir::http {

class admission {
 public:
  enum class verdict { admit, over_total, over_client };

  // 0 for max_per_client: no per-address cap.
  admission(std::size_t max_total, std::size_t max_per_client);

  // Counts a connection from `client` (IPv4 address, host order) if both caps allow it.
  verdict try_admit(std::uint32_t client);
  // Undoes one try_admit() that returned admit.
  void release(std::uint32_t client);

  std::size_t open() const { return total_.load(std::memory_order_relaxed); }
  std::size_t max_total() const { return max_total_; }
  std::size_t max_per_client() const { return max_per_client_; }

 private:
  const std::size_t max_total_;
  const std::size_t max_per_client_;
  std::atomic<std::size_t> total_{0};
  std::mutex mu_;
  std::unordered_map<std::uint32_t, std::uint32_t> per_client_;
};

// Raises the soft RLIMIT_NOFILE to the hard limit (a server's first defence against EMFILE) and returns
// the soft limit now in force.
std::size_t raise_descriptor_limit();

// The total connection cap for a descriptor limit: `limit - reserve`, at least 1, and at most
// `configured` when that is not 0.
std::size_t connection_cap(std::size_t descriptor_limit, std::size_t reserve, std::size_t configured);

}  // namespace weir::http

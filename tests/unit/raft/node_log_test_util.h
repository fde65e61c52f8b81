// Shared by the node log's tests: the log's path in mem_env, its segment files' paths, and bytes <-> text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weir::raft::test_support {

inline const std::string log_path = "/data/raft/node.log";

inline std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return {b.begin(), b.end()};
}

inline std::string text(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// The path of segment `no` of the log at log_path.
inline std::string seg(std::uint32_t no) {
  char buf[16];
  std::snprintf(buf, sizeof buf, ".%08u", no);
  return log_path + buf;
}

}  // namespace weir::raft::test_support

// Invariant checks that fail loudly with the values involved (STYLE.md), in every build type.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace weir::detail {
[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "weir: invariant broken at %s:%d: %s: %s\n", file, line, expr, msg.c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace weir::detail

#define WEIR_ASSERT(cond, ...)                                                            \
  do {                                                                                    \
    if (!(cond)) [[unlikely]]                                                             \
      ::weir::detail::assert_fail(#cond, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

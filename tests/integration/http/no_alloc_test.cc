// The plaintext path allocates nothing per request once a connection is warm: global operator new is
// replaced in this binary and counts the allocations made on event-loop threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "http_test_support.h"

namespace {
std::atomic<std::uint64_t> loop_allocations{0};
}

void* operator new(std::size_t n) {
  if (weir::io::event_loop::current() != nullptr) loop_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace weir::http {
namespace {

using testing::client;
using testing::get;
using testing::response;
using testing::running_server;

void plaintext(const request& req, exchange ex) {
  static constexpr header text[] = {{"Content-Type", "text/plain"}};
  static constexpr header json[] = {{"Content-Type", "application/json"}};
  if (req.path() == "/json") {
    char buf[64];
    int n = std::snprintf(buf, sizeof buf, "{\"message\":\"%s\"}", "Hello, World!");
    ex.respond(200, json, std::string_view(buf, static_cast<std::size_t>(n)));
    return;
  }
  ex.respond(200, text, "Hello, World!");
}

TEST(no_alloc, plaintext_and_json_requests_allocate_nothing_once_warm) {
  running_server s(testing::test_options(), plaintext);
  client c(s.port());
  std::string batch;
  for (int i = 0; i < 16; ++i) batch += get(i % 2 ? "/json" : "/plaintext");
  response r;
  // Warm up: the connection object and its buffers are created here.
  for (int round = 0; round < 4; ++round) {
    c.send(batch);
    for (int i = 0; i < 16; ++i) ASSERT_TRUE(c.read_response(r));
  }
  std::uint64_t before = loop_allocations.load();
  ASSERT_GT(before, 0u) << "the counter sees loop-thread allocations (connection set-up)";
  constexpr int rounds = 200;  // 3200 requests
  for (int round = 0; round < rounds; ++round) {
    c.send(batch);
    for (int i = 0; i < 16; ++i) {
      ASSERT_TRUE(c.read_response(r));
      ASSERT_EQ(r.status, 200);
    }
  }
  std::uint64_t during = loop_allocations.load() - before;
  std::fprintf(stderr, "loop-thread allocations during %d requests: %llu\n", rounds * 16,
               static_cast<unsigned long long>(during));
  // Per-second housekeeping (the Date and timeout-sweep timers) may allocate a handful of times while
  // this runs; one allocation per request would be 3200.
  EXPECT_LE(during, 16u) << "allocations on the loop thread during " << rounds * 16 << " requests";
  EXPECT_EQ(s.server().stats().requests, (rounds + 4) * 16u);
}

}  // namespace
}  // namespace weir::http

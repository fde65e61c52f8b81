// misbehaving_target: a tiny Durable Streams lookalike on the weir HTTP engine that gets things wrong
// on purpose, so the test can check that `weir bench` reports it instead of hiding it:
//   - every other catch-up read from offset -1 returns half of the stream (a short read);
//   - SSE subscribers receive only every other appended event (dropped events), and every fourth
//     appended event twice (duplicated events).
// Creates, appends and deletes are answered correctly. One engine thread; state is touched only there.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>

#include "http/server.h"

namespace weir::bench_test {

class misbehaving_target {
 public:
  misbehaving_target();
  ~misbehaving_target();  // stops the server and joins its thread
  std::uint16_t port() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
  std::unique_ptr<http::server> server_;
  std::thread thread_;
};

}  // namespace weir::bench_test

// checkpointed(loop, part): waits (10 s at most) until `part`, which lives on `loop`, has written a
// checkpoint and has none under way (partition::when_checkpointed). A checkpoint's records are encoded on
// a thread of the checkpointer's, so a command's answer comes before the checkpoint is on disk: a test
// that stops a partition and expects to recover from a checkpoint waits for it first.
#pragma once

#include <chrono>
#include <future>
#include <memory>

#include "io/event_loop.h"
#include "replica/partition.h"

namespace weir::replica::testing {

inline bool checkpointed(io::event_loop& loop, partition& part) {
  auto done = std::make_shared<std::promise<void>>();  // outlives a wait that times out
  std::future<void> written = done->get_future();
  loop.post([&part, done] { part.when_checkpointed([done] { done->set_value(); }); });
  return written.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
}

}  // namespace weir::replica::testing

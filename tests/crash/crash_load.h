// crash_load: the concurrent load the crash test kills the server under. Each writer thread has its own
// connection (blocking_client) and its own streams (plain bytes, forks of them, one JSON stream, one
// idempotent-producer stream) and also appends to the shared streams every writer writes to. Every
// request is recorded in the crash_model before it is sent and marked acknowledged when the answer
// arrives; the first transport error (the SIGKILL) leaves it pending and ends the writer.
//
// Also here: the producer retries after a restart (PROTOCOL.md 5.2.1), which must be answered 204 for
// anything already stored and must never store twice.
#pragma once

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "crash/blocking_client.h"
#include "crash/crash_model.h"

namespace weir::crash_test {

// A writer's streams and counters; lives for the whole run (all cycles).
struct writer_state {
  std::uint32_t id = 0;
  std::uint64_t next_seq = 0;  // writer sequence numbers in record framing
  std::vector<int> bytes_streams;
  int json_stream = -1;
  int producer_stream = -1;
  std::uint64_t epoch = 0;              // producer epoch in use
  std::uint64_t next_producer_seq = 0;  // next Producer-Seq in that epoch
};

struct load_counts {
  std::uint64_t requests = 0;
  std::uint64_t acked_appends = 0;
  std::uint64_t forks = 0;
  std::uint64_t closes = 0;
  std::uint64_t creates = 0;
};

class load_writer {
 public:
  load_writer(crash_model& model, writer_state& state, problem_log& problems, std::vector<int> shared,
              std::uint64_t seed, int cycle);

  // Sends requests until `stop` or the first transport error (at most `max_requests`).
  void run(std::uint16_t port, const std::atomic<bool>& stop, std::uint64_t max_requests);
  const load_counts& counts() const { return counts_; }

 private:
  // Each returns false on a transport error (the server is gone; the request stays pending).
  bool append_bytes(blocking_client& c, stream_model& s);
  bool append_json(blocking_client& c, stream_model& s);
  bool append_producer(blocking_client& c, stream_model& s);
  bool close_stream(blocking_client& c, stream_model& s);
  bool fork_stream(blocking_client& c, stream_model& source);
  bool create_stream(blocking_client& c, stream_kind kind, bool producer);

  stream_model* pick_owned_bytes(bool usable_only);
  std::string bytes_body(const stream_model& s, std::uint64_t seq);
  std::vector<std::string> json_messages(const stream_model& s, std::uint64_t seq);
  bool finish_append(stream_model& s, std::size_t index, const http_reply& r, bool expect_close,
                     int expect_status);
  void unexpected(const stream_model& s, const std::string& what, const http_reply& r);

  crash_model& model_;
  writer_state& st_;
  problem_log& problems_;
  std::vector<int> shared_;
  std::mt19937_64 rng_;
  int cycle_;
  load_counts counts_;
};

// After a restart: for the producer stream of `w`, resends its pending append (same id, epoch, seq and
// body: 200 if it was lost, 204 if it was stored), then some acknowledged ones of the current epoch
// (must be 204) and one of an older epoch (must be 403, fenced). False on a transport error.
bool retry_producer(blocking_client& c, crash_model& model, writer_state& w, problem_log& problems,
                    std::mt19937_64& rng);

// Values for request headers and URLs.
std::string url_encode(const std::string& s);
const char* content_type_of(stream_kind k);

}  // namespace weir::crash_test

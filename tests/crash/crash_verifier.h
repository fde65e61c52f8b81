// crash_verifier: after a restart, reads every stream of the run back from offset -1 and checks it against
// the crash_model:
//   - every acknowledged append is present exactly once and byte-exact (JSON: the same messages, whole);
//   - the data before an ack's Stream-Next-Offset is exactly what preceded that append: a read from the
//     ack offset starts right after it (so offsets did not move), and ack offsets sort like positions;
//   - unacknowledged appends are present or absent, but only whole and only once, and nothing else
//     (torn, foreign, refused) appears;
//   - what an earlier verification read is still a prefix (bytes never move or vanish);
//   - acknowledged closes hold, an append-and-close is atomic, forks read back their inherited prefix;
//   - streams whose creation was acknowledged exist.
// Pending outcomes are then resolved (present / absent) so that later cycles hold the server to them.
// Reads run on a few threads, one connection each; the checks run on the caller's thread.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "crash/blocking_client.h"
#include "crash/crash_model.h"

namespace weir::crash_test {

struct readback {
  std::string error;  // a read that failed (transport error or a status other than 200)
  int head_status = 0;
  bool head_closed = false;
  std::string head_content_type;
  std::string content;                // bytes streams: every byte from -1 to the tail
  std::vector<std::string> messages;  // JSON streams: every message, minified
  std::vector<std::string> keys;      // JSON streams: the "k" field of each message
  bool closed_at_tail = false;        // Stream-Closed: true on the read that reached the tail
};

struct verify_counts {
  std::uint64_t streams = 0;
  std::uint64_t appends_found = 0;
  std::uint64_t acked_checked = 0;
  std::uint64_t ack_offsets_read = 0;
  std::uint64_t pending_present = 0;
  std::uint64_t pending_absent = 0;
};

// HEAD, then catch-up reads (PROTOCOL.md 5.6) from -1 following Stream-Next-Offset to the tail.
readback read_stream(blocking_client& c, const stream_model& s);

class crash_verifier {
 public:
  // Every ack of `cycle` has its offset read back; of older cycles, `old_ack_sample` at random.
  crash_verifier(crash_model& model, problem_log& problems, int cycle, std::uint64_t seed,
                 std::size_t old_ack_sample);
  void run(std::uint16_t port, int threads);
  const verify_counts& counts() const { return counts_; }

 private:
  void check_stream(stream_model& s, readback& rb);
  std::size_t fork_start(stream_model& s, const readback& rb);
  void parse_bytes(stream_model& s, const readback& rb, std::size_t start, std::vector<std::size_t>& order);
  void parse_json(stream_model& s, const readback& rb, std::vector<std::size_t>& order);
  void check_closure(stream_model& s, const readback& rb, std::size_t size);
  void check_prefix(stream_model& s, const readback& rb);
  std::vector<const append_record*> pick_ack_checks(const stream_model& s);
  void check_ack_offset(blocking_client& c, const stream_model& s, const append_record& a);
  std::string describe(const stream_model& s, const append_record& a) const;

  crash_model& model_;
  problem_log& problems_;
  int cycle_;
  std::mt19937_64 rng_;
  std::size_t old_ack_sample_;
  verify_counts counts_;
};

}  // namespace weir::crash_test

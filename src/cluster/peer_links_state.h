// peer_links_state: what peer_links.cc and peer_links_tls.cc share of a peer_links object's insides:
// a queued frame, an outgoing connection and everything about one peer. Internal to src/cluster.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "cluster/peer_links.h"
#include "io/event_loop.h"
#include "io/tcp_stream.h"
#include "io/tls.h"
#include "storage/log_format.h"

namespace weir::cluster {

namespace peer_links_internal {
// Little-endian integers of the hello and the frame headers: the storage formats' helpers.
using storage::format::get_u32;
using storage::format::get_u64;
using storage::format::put_u32;
using storage::format::put_u64;
inline constexpr std::chrono::milliseconds min_backoff{50};
// TLS: pieces smaller than a record (RFC 8446 5.1: at most 2^14 bytes of plaintext) are gathered into
// one; a larger piece is written directly. Each SSL_write sends its records at once (a write(2) each).
inline constexpr std::size_t tls_record = 16u << 10;
}  // namespace peer_links_internal

// One queued frame: its header and its payload, written with two iovecs.
struct peer_links::frame {
  std::array<std::byte, header_size> header;
  std::vector<std::byte> payload;
  std::int64_t queued_ms = 0;  // when it was queued (loop time): how long frames wait behind others
  bool raft = false;           // a raft packet (channel 0: counted in out_link::raft_queued)
  std::size_t size() const { return header_size + payload.size(); }
};

// One outgoing connection to a peer, of one lane (peer_links.h, "Lanes"), and its queue.
struct peer_links::out_link {
  peer* owner = nullptr;
  std::uint32_t lane = bulk_lane;
  // out_gen tells a callback of a retired stream (an event of this turn) from the current one.
  std::unique_ptr<io::tcp_stream> out;
  // TLS: the session over `out` (declared after it: destroyed first, while the descriptor is open).
  std::unique_ptr<io::tls_transport> tls;
  bool up = false;  // connected, and with TLS the handshake done and the acceptor's identity checked
  std::uint64_t out_gen = 0;
  std::array<std::byte, hello_size> hello{};
  std::size_t hello_sent = hello_size;  // < hello_size: the hello goes out before any frame
  std::deque<frame> queue;              // in the order they go out
  std::size_t queued_bytes = 0;
  std::size_t raft_queued = 0;  // raft packets in the queue (the bulk lane's: transport::bulk_queued)
  std::size_t front_sent = 0;   // bytes of queue.front() already written
  bool blocked = false;         // the send buffer is full: wait for on_writable
  bool dirty = false;           // in dirty_: written at the end of this turn
  io::event_loop::timer_id retry_timer = 0;
  io::event_loop::timer_id handshake_timer = 0;  // TLS: a handshake not done by then is given up
  std::chrono::milliseconds backoff = peer_links_internal::min_backoff;
  std::int64_t dial_ms = 0;       // when the pending connect started
  std::int64_t max_queue_ms = 0;  // the longest a frame waited in the queue until fully written
  // What the acceptor wrote on this connection so far (it writes only a peer_refusal), until it reads as
  // one or as something else (not_refusal: ignored from then on, as an older acceptor's bytes would be).
  std::vector<std::byte> answer;
  bool not_refusal = false;
};

// Everything about one other node: its two outgoing connections, its two accepted ones, the counters.
struct peer_links::peer {
  std::uint64_t id = 0;
  peer_address addr;
  std::array<out_link, lane_count> lanes;
  std::array<in_conn*, lane_count> in{};  // accepted, by the lane its hello named
  // Counters (link_status), over both lanes.
  std::uint64_t bytes_sent = 0, bytes_received = 0, connects = 0, drops = 0, dropped_frames = 0;
  std::uint64_t tls_refused = 0;
  std::uint64_t read_yields = 0;                // reads from it that stopped at options::read_budget
  std::int64_t refusal_logged_ms = -1'000'000;  // its last hello refused for its incarnation was logged then
  std::size_t queued_bytes() const { return lanes[bulk_lane].queued_bytes + lanes[urgent_lane].queued_bytes; }
  bool out_up() const { return lanes[bulk_lane].up && lanes[urgent_lane].up; }
  // The peer's process is connected to this node (on either lane: a lane that redials alone is no
  // sign of a dead peer; the kernel closes both of a process that died).
  bool in_up() const { return in[bulk_lane] != nullptr || in[urgent_lane] != nullptr; }
};

}  // namespace weir::cluster

// peer_links, the outgoing side of a link: the queue of frames for a peer, its two lanes (an urgent frame
// goes ahead of the bulk frames not yet started), and writing it to the connection (writev, or SSL_write
// through flush_tls in peer_links_tls.cc). The rest of the class is in peer_links.cc.
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <string>

#include <fmt/format.h>

#include "base/log.h"
#include "cluster/peer_links.h"
#include "cluster/peer_links_state.h"
#include "storage/crc32c.h"

namespace weir::cluster {
namespace {
using peer_links_internal::put_u32;
constexpr int max_iov = 128;  // iovecs per writev: 64 frames
}  // namespace

void peer_links::send(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) {
  enqueue(to, channel, std::vector<std::byte>(payload.begin(), payload.end()));
}

void peer_links::send_urgent(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) {
  enqueue(to, channel, std::vector<std::byte>(payload.begin(), payload.end()), true);
}

void peer_links::enqueue(std::uint64_t to, std::uint8_t channel, std::vector<std::byte> payload,
                         bool urgent) {
  auto it = peers_.find(to);
  if (it == peers_.end()) {
    warn_limited(fmt::format("peer_links: node {}: a frame for node {}, which is not a peer, dropped",
                             opts_.self, to));
    return;
  }
  peer& p = *it->second;
  const std::size_t size = header_size + payload.size();
  if (payload.size() > max_payload || p.queued_bytes + size > opts_.max_pending_bytes) {
    ++p.dropped_frames;
    warn_limited(fmt::format("peer_links: node {}: dropped a frame of {} bytes for node {} ({} bytes queued)",
                             opts_.self, payload.size(), to, p.queued_bytes));
    return;
  }
  frame f;
  put_u32(f.header.data(), static_cast<std::uint32_t>(payload.size()));
  f.header[4] = std::byte{channel};
  put_u32(f.header.data() + 5, storage::crc32c(payload));
  f.payload = std::move(payload);
  f.queued_ms = loop_.now_ms();
  f.urgent = urgent;
  f.raft_bulk = channel == 0 && !urgent;
  if (urgent) {
    p.queue.insert(p.queue.begin() + static_cast<std::ptrdiff_t>(urgent_slot(p)), std::move(f));
    ++p.urgent_queued;
  } else {
    if (f.raft_bulk) ++p.raft_bulk_queued;
    p.queue.push_back(std::move(f));
  }
  p.queued_bytes += size;
  if (!p.dirty) {
    p.dirty = true;
    dirty_.push_back(&p);
    schedule_turn_end();
  }
}

// An urgent frame goes ahead of every bulk frame that has not started to go out, but after
//  - the frame being written: the rest of its bytes must follow its first ones;
//  - the urgent frames queued before it: the lane keeps its order;
//  - over TLS, while a write is blocked, the frames of that write: SSL_write must be given the same
//    bytes again first (flush_tls), at most one record from the current position.
// Urgent frames leave at the next write, so they sit near the head and the walk is short.
std::size_t peer_links::urgent_slot(const peer& p) {
  std::size_t slot = p.front_sent > 0 ? 1 : 0;
  if (p.tls && p.blocked) {
    std::size_t covered = p.hello_sent < hello_size ? hello_size - p.hello_sent : 0;
    std::size_t skip = p.front_sent, i = 0;
    for (; i < p.queue.size() && covered < peer_links_internal::tls_record; ++i) {
      covered += p.queue[i].size() - skip;
      skip = 0;
    }
    slot = std::max(slot, i);
  }
  for (std::size_t i = 0, seen = 0; seen < p.urgent_queued; ++i) {
    if (p.queue[i].urgent) {
      ++seen;
      slot = std::max(slot, i + 1);
    }
  }
  return slot;
}

void peer_links::pop_front(peer& p) {
  const frame& f = p.queue.front();
  p.queued_bytes -= f.size();
  if (f.urgent) --p.urgent_queued;
  if (f.raft_bulk) --p.raft_bulk_queued;
  p.queue.pop_front();
  p.front_sent = 0;
}

// Writes the hello (if due) and queued frames, many per writev, until the queue is empty or the socket is
// full.
void peer_links::flush(peer& p) {
  if (!p.out || !p.up || p.blocked) return;
  if (p.tls) return flush_tls(p);
  for (;;) {
    std::array<iovec, max_iov> iov;
    int n = 0;
    std::size_t total = 0;
    auto add = [&](const std::byte* data, std::size_t len) {
      iov[static_cast<std::size_t>(n++)] = iovec{const_cast<std::byte*>(data), len};
      total += len;
    };
    if (p.hello_sent < hello_size) add(p.hello.data() + p.hello_sent, hello_size - p.hello_sent);
    std::size_t skip = p.front_sent;
    for (auto& f : p.queue) {
      if (n + 2 > max_iov) break;
      if (skip < header_size) add(f.header.data() + skip, header_size - skip);
      const std::size_t off = skip > header_size ? skip - header_size : 0;
      if (off < f.payload.size()) add(f.payload.data() + off, f.payload.size() - off);
      skip = 0;
    }
    if (n == 0) return;
    auto w = p.out->writev(iov.data(), n);
    if (w == io::tcp_stream::would_block) {
      p.blocked = true;
      return;
    }
    if (w < 0) {
      lose(p, "write failed", errno);
      return;
    }
    const auto written = static_cast<std::size_t>(w);
    p.bytes_sent += written;
    advance(p, written);
    if (written < total) {
      p.blocked = true;  // the send buffer is full: on_writable resumes
      return;
    }
  }
}

// TLS: the same bytes as flush, from the same queue, through SSL_write. A write that would block must be
// retried with the same bytes (and no fewer: SSL_write's retry rule), which the queue gives back: it is
// gathered again from the same position, only longer if frames were queued meanwhile. A piece of at
// least a record goes out directly (no copy of large payloads); smaller ones are gathered into one
// record.
void peer_links::advance(peer& p, std::size_t written) {
  if (p.hello_sent < hello_size) {
    const std::size_t h = std::min(written, hello_size - p.hello_sent);
    p.hello_sent += h;
    written -= h;
  }
  while (written > 0) {
    WEIR_ASSERT(!p.queue.empty(), "peer_links: {} bytes written past the queue of node {}", written, p.id);
    const std::size_t rest = p.queue.front().size() - p.front_sent;
    if (written < rest) {
      p.front_sent += written;
      return;
    }
    written -= rest;
    note_wait(p, p.queue.front());
    pop_front(p);
  }
}

// A frame that waited long in the queue delayed every raft message behind it (heartbeats of other
// groups among them): logged, rate-limited, with what was queued behind it.
void peer_links::note_wait(peer& p, const frame& f) {
  const std::int64_t waited = loop_.now_ms() - f.queued_ms;
  p.max_queue_ms = std::max(p.max_queue_ms, waited);
  if (f.urgent) p.max_urgent_queue_ms = std::max(p.max_urgent_queue_ms, waited);
  if (waited < slow_frame_ms) return;
  warn_limited(
      fmt::format("peer_links: node {}: a frame of {} bytes (channel {}{}) waited {} ms in the queue to "
                  "node {}; {} bytes queued behind it",
                  opts_.self, f.payload.size(), std::to_integer<int>(f.header[4]), f.urgent ? ", urgent" : "",
                  waited, p.id, p.queued_bytes));
}

}  // namespace weir::cluster

// peer_links, the outgoing side of a link: the queues of frames for a peer, one per lane, and writing
// each to its lane's connection (writev, or SSL_write through flush_tls in peer_links_tls.cc). The rest
// of the class is in peer_links.cc.
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
  if (payload.size() > max_payload || p.queued_bytes() + size > opts_.max_pending_bytes) {
    ++p.dropped_frames;
    warn_limited(fmt::format("peer_links: node {}: dropped a frame of {} bytes for node {} ({} bytes queued)",
                             opts_.self, payload.size(), to, p.queued_bytes()));
    return;
  }
  frame f;
  put_u32(f.header.data(), static_cast<std::uint32_t>(payload.size()));
  f.header[4] = std::byte{channel};
  put_u32(f.header.data() + 5, storage::crc32c(payload));
  f.payload = std::move(payload);
  f.queued_ms = loop_.now_ms();
  f.raft = channel == 0;
  out_link& l = p.lanes[urgent ? urgent_lane : bulk_lane];
  if (f.raft) ++l.raft_queued;
  l.queue.push_back(std::move(f));
  l.queued_bytes += size;
  if (!l.dirty) {
    l.dirty = true;
    dirty_.push_back(&l);
    schedule_turn_end();
  }
}

void peer_links::pop_front(out_link& l) {
  const frame& f = l.queue.front();
  l.queued_bytes -= f.size();
  if (f.raft) --l.raft_queued;
  l.queue.pop_front();
  l.front_sent = 0;
}

// Writes the hello (if due) and queued frames, many per writev, until the queue is empty or the socket is
// full.
void peer_links::flush(out_link& l) {
  if (!l.out || !l.up || l.blocked) return;
  if (l.tls) return flush_tls(l);
  for (;;) {
    std::array<iovec, max_iov> iov;
    int n = 0;
    std::size_t total = 0;
    auto add = [&](const std::byte* data, std::size_t len) {
      iov[static_cast<std::size_t>(n++)] = iovec{const_cast<std::byte*>(data), len};
      total += len;
    };
    if (l.hello_sent < hello_size) add(l.hello.data() + l.hello_sent, hello_size - l.hello_sent);
    std::size_t skip = l.front_sent;
    for (auto& f : l.queue) {
      if (n + 2 > max_iov) break;
      if (skip < header_size) add(f.header.data() + skip, header_size - skip);
      const std::size_t off = skip > header_size ? skip - header_size : 0;
      if (off < f.payload.size()) add(f.payload.data() + off, f.payload.size() - off);
      skip = 0;
    }
    if (n == 0) return;
    auto w = l.out->writev(iov.data(), n);
    if (w == io::tcp_stream::would_block) {
      l.blocked = true;
      return;
    }
    if (w < 0) {
      lose(l, "write failed", errno);
      return;
    }
    const auto written = static_cast<std::size_t>(w);
    l.owner->bytes_sent += written;
    advance(l, written);
    if (written < total) {
      l.blocked = true;  // the send buffer is full: on_writable resumes
      return;
    }
  }
}

void peer_links::advance(out_link& l, std::size_t written) {
  if (l.hello_sent < hello_size) {
    const std::size_t h = std::min(written, hello_size - l.hello_sent);
    l.hello_sent += h;
    written -= h;
  }
  while (written > 0) {
    WEIR_ASSERT(!l.queue.empty(), "peer_links: {} bytes written past the queue of node {}", written,
                l.owner->id);
    const std::size_t rest = l.queue.front().size() - l.front_sent;
    if (written < rest) {
      l.front_sent += written;
      return;
    }
    written -= rest;
    note_wait(l, l.queue.front());
    pop_front(l);
  }
}

// A frame that waited long in the queue delayed every frame of its lane behind it: logged, rate-limited,
// with what was queued behind it.
void peer_links::note_wait(out_link& l, const frame& f) {
  const std::int64_t waited = loop_.now_ms() - f.queued_ms;
  l.max_queue_ms = std::max(l.max_queue_ms, waited);
  if (waited < slow_frame_ms) return;
  warn_limited(
      fmt::format("peer_links: node {}: a frame of {} bytes (channel {}{}) waited {} ms in the queue to "
                  "node {}; {} bytes queued behind it",
                  opts_.self, f.payload.size(), std::to_integer<int>(f.header[4]),
                  l.lane == urgent_lane ? ", urgent" : "", waited, l.owner->id, l.queued_bytes));
}

}  // namespace weir::cluster

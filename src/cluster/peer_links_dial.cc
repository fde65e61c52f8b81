// peer_links: the dialing side (peer_links.h): connecting each out_link to its peer, the hello and TLS
// handshake, losing a link (and the backoff before the next dial), and writing a link's queued frames.
// On the owning loop, like the rest of peer_links.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "base/assert.h"
#include "base/log.h"
#include "cluster/peer_links.h"
#include "cluster/peer_links_state.h"
#include "io/socket.h"
#include "io/tcp_stream.h"
#include "io/tls.h"

namespace weir::cluster {
namespace {
using namespace std::chrono_literals;
using peer_links_internal::min_backoff;
constexpr std::chrono::milliseconds max_backoff = 1s;
// TCP_USER_TIMEOUT of outgoing connections: written data unacknowledged this long fails the link.
constexpr std::chrono::milliseconds user_timeout = 10s;

// Loopback dials to a port nobody listens on can, rarely, connect the socket to itself (TCP simultaneous
// open, when the kernel picks that very port as the source port); such a link would also keep the peer
// from binding its port.
bool connected_to_itself(int fd) {
  sockaddr_in local{}, remote{};
  socklen_t ll = sizeof local, rl = sizeof remote;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &rl) != 0) return false;
  return local.sin_port == remote.sin_port && local.sin_addr.s_addr == remote.sin_addr.s_addr;
}
}  // namespace

void peer_links::dial(out_link& l) {
  l.retry_timer = 0;
  if (l.out) return;
  const peer& p = *l.owner;
  const std::uint64_t gen = ++l.out_gen;
  out_link* lp = &l;
  io::tcp_stream::callbacks cb{
      .on_connected =
          [this, lp, gen](int err) {
            if (lp->out_gen == gen) on_connected(*lp, err);
          },
      .on_readable =
          [this, lp, gen] {
            if (lp->out_gen != gen) return;
            if (lp->tls && !lp->up) return step_handshake(*lp);
            drain_out(*lp);
          },
      .on_writable =
          [this, lp, gen] {
            if (lp->out_gen != gen) return;
            if (lp->tls && !lp->up) return step_handshake(*lp);
            lp->blocked = false;
            flush(*lp);
          },
      .on_hangup =
          [this, lp, gen] {
            if (lp->out_gen == gen) lose(*lp, "closed by the peer", 0);
          },
  };
  l.dial_ms = loop_.now_ms();
  l.answer.clear();
  l.not_refusal = false;
  auto s = io::tcp_stream::connect(loop_, p.addr.port, std::move(cb), p.addr.host);
  if (!s) {  // loopback may refuse at once
    log::debug("peer_links: node {}: dialing node {} ({}:{}): {}", opts_.self, p.id, p.addr.host, p.addr.port,
               s.err().reason);
    lose(l, "connect failed", 0);
    return;
  }
  l.out = std::move(*s);
  // A peer host that died without a FIN would otherwise hold the link (and a connect to it) for minutes
  // of retransmissions; raft's heartbeats keep a live link's data acknowledged well within this.
  unsigned user_timeout_ms = static_cast<unsigned>(user_timeout.count());
  ::setsockopt(l.out->fd(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  if (opts_.send_buffer > 0) {
    // A write stops (would block) once the kernel holds this much, so that the rest waits in the queue.
    const int size = static_cast<int>(std::min<std::size_t>(opts_.send_buffer, INT32_MAX));
    ::setsockopt(l.out->fd(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  }
}

void peer_links::on_connected(out_link& l, int err) {
  const peer& p = *l.owner;
  if (err == 0 && connected_to_itself(l.out->fd())) {
    l.out->close();  // not a drop: it never reached the peer
    err = EADDRNOTAVAIL;
  }
  if (err != 0) {
    log::debug("peer_links: node {}: dialing node {} ({}:{}): {}", opts_.self, p.id, p.addr.host, p.addr.port,
               std::strerror(err));
    lose(l, "connect failed", err);
    return;
  }
  if (!opts_.tls) return link_up(l);
  l.tls = opts_.tls->connect(l.out->fd());
  if (!l.tls) {
    lose(l, "TLS session setup failed", 0);
    return;
  }
  // A peer that accepted the connection but never answers the handshake (its host died after the SYN
  // was answered: nothing unacknowledged, so TCP_USER_TIMEOUT does not fire) would hold the link.
  out_link* lp = &l;
  l.handshake_timer = loop_.add_timer(opts_.tls_handshake_timeout, [this, lp] {
    lp->handshake_timer = 0;
    if (!lp->up) lose(*lp, "TLS handshake timed out", 0);
  });
  step_handshake(l);
}

void peer_links::link_up(out_link& l) {
  if (l.handshake_timer != 0) loop_.cancel_timer(l.handshake_timer);
  l.handshake_timer = 0;
  l.up = true;
  ++l.owner->connects;
  l.backoff = min_backoff;
  l.hello_sent = 0;
  l.blocked = false;
  flush(l);
}

// The outgoing connection is gone (or never came up): retire it, cut the frame it was in the middle of,
// keep the rest of the queue for the next connection, and redial after the backoff.
void peer_links::lose(out_link& l, const char* why, int err) {
  peer& p = *l.owner;
  if (l.out) {
    if (l.up) {
      ++p.drops;
      warn_limited(fmt::format("peer_links: node {}: lost the {} connection to node {} ({}:{}): {}{}{}",
                               opts_.self, l.lane == urgent_lane ? "urgent" : "bulk", p.id, p.addr.host,
                               p.addr.port, why, err != 0 ? ": " : "", err != 0 ? std::strerror(err) : ""));
    }
    l.tls.reset();  // before the descriptor closes
    l.out->close();
    retired_streams_.push_back(std::move(l.out));
    schedule_turn_end();
  }
  ++l.out_gen;
  l.up = false;
  if (l.handshake_timer != 0) loop_.cancel_timer(l.handshake_timer);
  l.handshake_timer = 0;
  if (l.front_sent > 0) {
    pop_front(l);
    ++p.dropped_frames;
  }
  l.blocked = false;
  l.hello_sent = hello_size;
  if (l.retry_timer != 0) return;
  out_link* lp = &l;
  l.retry_timer = loop_.add_timer(l.backoff, [this, lp] { dial(*lp); });
  l.backoff = std::min(l.backoff * 2, max_backoff);
}

// The acceptor never writes; anything it does send is ignored. End of stream or an error: the link is down.
// TLS: the acceptor's alert, when it refused our certificate, arrives here (TLS 1.3 finishes the
// dialer's handshake before the acceptor has checked the dialer's certificate).
void peer_links::drain_out(out_link& l) {
  peer& p = *l.owner;
  char buf[256];
  for (;;) {
    if (l.tls) {
      auto n = l.tls->read(buf, sizeof buf);
      if (n > 0) {
        if (read_refusal(l, buf, static_cast<std::size_t>(n))) return;
        continue;
      }
      if (n == io::transport::would_block) {
        // A write that waited for the session to read (a key update) can go on.
        if (l.blocked && l.tls->write_needs_readable()) {
          l.blocked = false;
          flush(l);
        }
        return;
      }
      if (n == io::transport::failed && l.tls->protocol_failure()) {
        refused_tls(&p, fmt::format("node {} ({}:{}) ended the TLS session: {}", p.id, p.addr.host,
                                    p.addr.port, l.tls->error()));
      }
      lose(l, n == 0 ? "closed by the peer" : "TLS read failed", 0);
      return;
    }
    auto n = l.out->read(buf, sizeof buf);
    if (n > 0) {
      if (read_refusal(l, buf, static_cast<std::size_t>(n))) return;
      continue;
    }
    if (n == io::tcp_stream::would_block) return;
    lose(l, n == 0 ? "closed by the peer" : "read failed", n == 0 ? 0 : errno);
    return;
  }
}

}  // namespace weir::cluster

#include "cluster/peer_links.h"

#include <arpa/inet.h>
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
#include <deque>
#include <string>

#include "base/assert.h"
#include "base/log.h"
#include "cluster/peer_links_state.h"
#include "io/socket.h"
#include "io/tcp_stream.h"
#include "io/tls.h"
#include "storage/crc32c.h"

namespace weir::cluster {
namespace {
using peer_links_internal::get_u32;
using peer_links_internal::get_u64;
using peer_links_internal::put_u32;
using peer_links_internal::put_u64;
using namespace std::chrono_literals;

// An accepted connection that has not said hello by then is closed (a port scanner, a stuck client).
constexpr std::chrono::milliseconds hello_timeout = 10s;
// A connect pending this long when the peer's own connection arrives is abandoned and redialled.
constexpr std::chrono::milliseconds stale_connect = 1s;
// One read of an incoming connection (a readiness event or its continuation) that took this long is
// logged: a slow turn of the loop that this read made.
constexpr std::chrono::milliseconds slow_read = 200ms;
constexpr std::size_t read_chunk = 64u << 10;  // free space asked of every recv
// A refused connection is read (and its bytes dropped) until the dialer closes it, at most this long, so
// that the refusal is not cut by a reset (closing with unread bytes sends one).
constexpr std::chrono::milliseconds refusal_linger = 2s;
// A plain listener: unlike io::listen_tcp no SO_REUSEPORT, so a second process configured with the same
// peer port fails to start instead of silently taking half of the connections. SO_REUSEADDR lets a
// restarted node bind while its old connections linger in TIME_WAIT.
result<int> listen_on(const peer_address& a, std::size_t receive_buffer) {
  auto sys_error = [](const char* what) {
    return make_error(io::socket_errc::system, std::string(what) + ": " + std::strerror(errno));
  };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(a.port);
  const std::string host = a.host == "localhost" ? "127.0.0.1" : a.host;
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return make_error(io::socket_errc::bad_address, "not an IPv4 address: " + a.host);
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (receive_buffer > 0) {
    // Before listen: accepted connections inherit it, and their window scale is chosen from it.
    const int size = static_cast<int>(std::min<std::size_t>(receive_buffer, INT32_MAX));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    auto e = errno == EADDRINUSE ? make_error(io::socket_errc::in_use, a.host + ":" + std::to_string(a.port) +
                                                                           ": address already in use")
                                 : sys_error("bind");
    ::close(fd);
    return e;
  }
  if (::listen(fd, 128) != 0) {
    auto e = sys_error("listen");
    ::close(fd);
    return e;
  }
  return fd;
}

}  // namespace

class peer_links::listener final : public io::io_handler {
 public:
  listener(peer_links& owner, int fd) : owner_(owner), fd_(fd) {}
  ~listener() {
    owner_.loop_.remove_fd(fd_);
    ::close(fd_);
  }
  int fd() const { return fd_; }
  void on_io(std::uint32_t) override { owner_.accept_all(); }

 private:
  peer_links& owner_;
  int fd_;
};

// An accepted connection: receive only. Reads the hello, then frames, until a bad byte or the end.
class peer_links::in_conn final : public io::io_handler {
 public:
  in_conn(peer_links& owner, int fd, std::string remote)
      : owner_(owner), fd_(fd), remote_(std::move(remote)) {}
  ~in_conn() { close(); }

  bool start() {
    if (owner_.opts_.tls) {
      tls_ = owner_.opts_.tls->accept(fd_);
      if (!tls_) return false;
    }
    // TLS: the acceptor writes its part of the handshake, which may wait for room in the send buffer.
    const std::uint32_t events = tls_ ? EPOLLIN | EPOLLOUT | EPOLLRDHUP : EPOLLIN | EPOLLRDHUP;
    if (!owner_.loop_.add_fd(fd_, events, this)) return false;
    hello_timer_ = owner_.loop_.add_timer(hello_timeout, [this] {
      hello_timer_ = 0;
      owner_.warn_limited(fmt::format("peer_links: node {}: {} sent no hello in {} ms; closing",
                                      owner_.opts_.self, remote_, hello_timeout.count()));
      owner_.retire(this);
    });
    return true;
  }
  void close() {
    *alive_ = false;  // a read posted past the budget does nothing
    if (fd_ < 0) return;
    if (hello_timer_ != 0) owner_.loop_.cancel_timer(hello_timer_);
    hello_timer_ = 0;
    tls_.reset();  // before the descriptor closes
    owner_.loop_.remove_fd(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  std::uint64_t peer_id() const { return peer_; }
  std::uint32_t lane() const { return lane_; }

  void on_io(std::uint32_t) override {
    if (fd_ < 0) return;  // retired earlier in this turn; the loop still had its event
    // A read that held the loop long is logged (rate-limited) with what it read: it tells a stall of
    // this read (many frames, or frames slow to handle) from one elsewhere on the loop.
    struct timing {
      in_conn& c;
      std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
      std::uint64_t bytes = c.bytes_read_, frames = c.frames_read_;
      ~timing() {
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
                .count();
        if (ms < slow_read.count()) return;
        c.owner_.warn_limited(
            fmt::format("peer_links: node {}: one read of node {}'s connection took {} ms ({} "
                        "bytes, {} frames handled)",
                        c.owner_.opts_.self, c.peer_, ms, c.bytes_read_ - bytes, c.frames_read_ - frames));
      }
    } timed{*this};
    if (tls_ && !tls_->established()) {
      const auto r = tls_->handshake();
      if (r == io::transport::would_block) return;
      if (r == io::transport::failed) {
        fail_tls();
        return;
      }
    }
    // Edge-triggered: read until the socket (TLS: the session) says would-block (or closes), but at
    // most options::read_budget bytes per call. Each frame read is handled at once (raft's recv, forwarded
    // writes), and a peer with megabytes queued for this node keeps the socket full: read to the end,
    // one call lasted as long as the peer kept sending (turns of 0.4-1.4 s under a burst of 512 KiB
    // appends), and meanwhile this node sent nothing, not even heartbeats (its packets go out at the end
    // of the turn): its followers stood for election. Past the budget the rest is read in a task
    // posted to the loop, after this turn's timers and sends.
    std::size_t budget = std::max<std::size_t>(owner_.opts_.read_budget, 1);
    for (;;) {
      if (budget == 0) {
        ++owner_.read_yields_;
        if (auto* p = owner_.find_peer(peer_)) ++p->read_yields;
        owner_.loop_.post([this, alive = std::weak_ptr<bool>(alive_)] {
          if (auto a = alive.lock(); a && *a) on_io(EPOLLIN);
        });
        return;
      }
      // While a frame's tail is due, read just into the room it needs; otherwise ask for a whole chunk.
      const std::size_t room = buf_.size() - end_;
      if (room == 0 || (need_ == 0 && room < read_chunk) || need_ > buf_.size() - begin_) make_room();
      const std::size_t want = std::min(buf_.size() - end_, budget);
      std::ptrdiff_t n;
      if (tls_) {
        n = tls_->read(reinterpret_cast<char*>(buf_.data() + end_), want);
        if (n == io::transport::would_block) return;
        if (n == io::transport::failed) {
          fail_tls();
          return;
        }
      } else {
        n = io::recv_bytes(fd_, buf_.data() + end_, want, 0);
      }
      if (n > 0) {
        end_ += static_cast<std::size_t>(n);
        bytes_read_ += static_cast<std::size_t>(n);
        budget -= std::min(budget, static_cast<std::size_t>(n));
        if (!parse()) return;
        continue;
      }
      if (n == 0) {
        owner_.retire(this);  // the peer closed (it stopped, or redials)
        return;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      log::debug("peer_links: node {}: connection from {}: {}", owner_.opts_.self, remote_,
                 std::strerror(errno));
      owner_.retire(this);
      return;
    }
  }

 private:
  void make_room() {
    const std::size_t live = end_ - begin_;
    if (begin_ > 0) {
      if (live > 0) std::memmove(buf_.data(), buf_.data() + begin_, live);
      begin_ = 0;
      end_ = live;
    }
    // A frame announced by its header gets its whole size at once (no doubling copies of 8 MiB).
    const std::size_t want = std::max(end_ + read_chunk, need_);
    if (buf_.size() < want) buf_.resize(want);
  }

  // Consumes every whole hello/frame in the buffer. False: the connection was retired.
  bool parse() {
    if (refused_) {  // lingering after a refusal: nothing it sends counts
      begin_ = end_ = 0;
      return true;
    }
    for (;;) {
      const std::size_t avail = end_ - begin_;
      const std::byte* p = buf_.data() + begin_;
      if (peer_ == 0) {
        // The magic and the version are judged as soon as they are in: a stranger to the protocol, or
        // a node of another version whose hello is shorter, is not kept waiting for the hello timeout.
        if (hello_rejected_early(std::span(p, avail)))
          return refuse(fmt::format("a bad hello from {}", remote_));
        if (avail < hello_size) return true;
        auto hello = decode_hello(std::span(p, hello_size));
        if (!hello) return refuse(fmt::format("a bad hello from {}: {}", remote_, hello.err().reason));
        const std::uint64_t id = hello->sender;
        const std::uint32_t lane = hello->link_lane, core_lane = hello->core_lane;
        // Every node maps group g to core lane g mod its lane count: nodes of different counts would
        // send a group's messages to the wrong lane.
        if (const std::uint32_t theirs = hello->core_lanes; theirs != owner_.opts_.core_lanes) {
          return refuse(fmt::format(
              "{} (node {}) runs {} raft lanes, this node {}: every node of a cluster must be started with "
              "the same raft-lanes",
              remote_, id, theirs, owner_.opts_.core_lanes));
        }
        // TLS: the hello's id must be one the certificate names (a node's certificate cannot stand for
        // another node).
        if (tls_ && id != owner_.opts_.self && !names_node(tls_->peer_names(), id)) {
          std::string names;
          for (const auto& n : tls_->peer_names()) names += (names.empty() ? "" : ", ") + n;
          owner_.refused_tls(owner_.find_peer(id),
                             fmt::format("closing the connection from {}: its hello says node {} but its "
                                         "certificate names [{}], not {}",
                                         remote_, id, names, node_name(id)));
          owner_.retire(this);
          return false;
        }
        // Core lane 0 judges every hello of a known peer, other core lanes' included, before anything the
        // connection carries is delivered.
        if (owner_.opts_.book && id != owner_.opts_.self && owner_.find_peer(id) != nullptr) {
          peer_refusal refusal;
          switch (owner_.judge_incarnation(id, hello->incarnation, remote_, refusal)) {
            case hello_judgement::accept:
              break;
            case hello_judgement::refuse:
              owner_.retire(this);
              return false;
            case hello_judgement::refuse_and_tell:
              return refuse_and_tell(refusal);
          }
        }
        if (core_lane != owner_.opts_.core_lane) {
          if (!owner_.handoff_ || owner_.opts_.core_lane != 0 || core_lane >= owner_.opts_.core_lanes) {
            return refuse(fmt::format("{} (node {}) names core lane {}, which this node does not have",
                                      remote_, id, core_lane));
          }
          begin_ += hello_size;
          owner_.handoff_(core_lane, hand_over(id, lane));
          owner_.retire(this);
          return false;
        }
        if (!owner_.identify(this, id, lane)) {
          if (id != owner_.opts_.self &&
              std::find(owner_.strangers_.begin(), owner_.strangers_.end(), id) == owner_.strangers_.end()) {
            owner_.strangers_.push_back(id);
            owner_.schedule_turn_end();
          }
          return refuse(fmt::format("{} says it is node {}, not one of its peers", remote_, id));
        }
        peer_ = id;
        lane_ = lane;
        owner_.loop_.cancel_timer(hello_timer_);
        hello_timer_ = 0;
        begin_ += hello_size;
        owner_.count_received(peer_, hello_size);
        continue;
      }
      if (avail < header_size) break;
      const std::uint32_t len = get_u32(p);
      const auto channel = std::to_integer<std::uint8_t>(p[4]);
      const std::uint32_t crc = get_u32(p + 5);
      if (len > max_payload) {
        return refuse(fmt::format("node {} ({}) sent a frame of {} bytes (the limit is {})", peer_, remote_,
                                  len, max_payload));
      }
      if (avail < header_size + len) {
        need_ = header_size + len;
        break;
      }
      need_ = 0;
      std::span payload(p + header_size, len);
      if (storage::crc32c(payload) != crc) {
        return refuse(fmt::format("node {} ({}) sent a frame with a bad checksum", peer_, remote_));
      }
      begin_ += header_size + len;
      owner_.count_received(peer_, header_size + len);
      ++frames_read_;
      owner_.deliver(peer_, channel, payload);
      if (fd_ < 0) return false;  // the receiver removed the peer: this connection was retired
    }
    if (begin_ == end_) {
      begin_ = end_ = 0;
      if (buf_.size() > 4 * read_chunk) std::vector<std::byte>().swap(buf_);  // after a large frame
    }
    return true;
  }

  // Core lane 0: this connection leaves for another core lane (its descriptor, session and unread bytes;
  // this object is retired without closing them).
  std::unique_ptr<handed_conn> hand_over(std::uint64_t id, std::uint32_t lane) {
    auto h = std::make_unique<handed_conn>();
    if (hello_timer_ != 0) owner_.loop_.cancel_timer(hello_timer_);
    hello_timer_ = 0;
    owner_.loop_.remove_fd(fd_);
    h->fd = std::exchange(fd_, -1);
    h->tls = std::move(tls_);
    h->bytes.assign(buf_.begin() + static_cast<std::ptrdiff_t>(begin_),
                    buf_.begin() + static_cast<std::ptrdiff_t>(end_));
    h->remote = remote_;
    h->id = id;
    h->link_lane = lane;
    return h;
  }

 public:
  // Another core lane: takes over what hand_over gave, and judges the sender as identify does.
  void adopt(std::unique_ptr<handed_conn> h) {
    tls_ = std::move(h->tls);
    buf_ = std::move(h->bytes);
    begin_ = 0;
    end_ = buf_.size();
    if (!owner_.loop_.add_fd(fd_, EPOLLIN | EPOLLRDHUP, this)) {
      owner_.retire(this);
      return;
    }
    if (h->link_lane >= lane_count || !owner_.identify(this, h->id, h->link_lane)) {
      refuse(fmt::format("{} says it is node {}, not one of core lane {}'s peers", remote_, h->id,
                         owner_.opts_.core_lane));
      return;
    }
    peer_ = h->id;
    lane_ = h->link_lane;
    owner_.count_received(peer_, hello_size);
    if (!parse()) return;
    // What arrived before the descriptor joined this loop, or the session holds decrypted already.
    owner_.loop_.post([this, alive = std::weak_ptr<bool>(alive_)] {
      if (auto a = alive.lock(); a && *a) on_io(EPOLLIN);
    });
  }

 private:
  // The session failed: a certificate that did not verify (or none), an alert, bytes that are not TLS
  // (a plain-TCP peer's hello) are refusals; a connection closed or reset mid-way is not.
  void fail_tls() {
    if (tls_->protocol_failure()) {
      owner_.refused_tls(peer_ != 0 ? owner_.find_peer(peer_) : nullptr,
                         fmt::format("closing the connection from {}{}: {}", remote_,
                                     peer_ != 0 ? fmt::format(" (node {})", peer_) : "", tls_->error()));
    } else {
      log::debug("peer_links: node {}: TLS connection from {}: {}", owner_.opts_.self, remote_,
                 tls_->error());
    }
    owner_.retire(this);
  }

  // Writes the refusal, ends the sending side and keeps reading (dropping the bytes) until the dialer
  // closes or refusal_linger passes: closing with unread bytes would reset the connection, and a reset
  // may reach the dialer before it read the refusal.
  bool refuse_and_tell(const peer_refusal& r) {
    const std::vector<std::byte> bytes = encode_refusal(r);
    if (tls_) {
      (void)tls_->write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      tls_->shutdown_write();
    } else {
      // A new connection's send buffer is empty: the few hundred bytes go at once (or not at all).
      (void)io::send_bytes(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(fd_, SHUT_WR);
    }
    refused_ = true;
    begin_ = end_ = 0;
    if (hello_timer_ != 0) owner_.loop_.cancel_timer(hello_timer_);
    hello_timer_ = owner_.loop_.add_timer(refusal_linger, [this] {
      hello_timer_ = 0;
      owner_.retire(this);
    });
    return false;
  }

  bool refuse(std::string why) {
    owner_.warn_limited(fmt::format("peer_links: node {}: closing a connection: {}", owner_.opts_.self, why));
    owner_.retire(this);
    return false;
  }

  peer_links& owner_;
  int fd_;
  std::string remote_;      // "ip:port", for log lines
  std::uint64_t peer_ = 0;  // 0 until the hello is accepted
  bool refused_ = false;    // a refusal was written: reading only until the dialer closes
  std::uint32_t lane_ = bulk_lane;
  io::event_loop::timer_id hello_timer_ = 0;
  std::vector<std::byte> buf_;
  std::size_t begin_ = 0, end_ = 0;         // unparsed bytes
  std::size_t need_ = 0;                    // the size of the frame being received, once its header is in
  std::unique_ptr<io::tls_transport> tls_;  // TLS: the session over fd_
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::uint64_t bytes_read_ = 0, frames_read_ = 0;  // since the connection was accepted
};

class peer_links::raft_adapter final : public raft::transport {
 public:
  explicit raft_adapter(peer_links& owner) : owner_(owner) {}
  void send(raft::node_id to, std::vector<std::byte> packet) override {
    owner_.enqueue(to.value(), 0, std::move(packet));
  }
  void send_urgent(raft::node_id to, std::vector<std::byte> packet) override {
    owner_.enqueue(to.value(), 0, std::move(packet), true);
  }
  std::size_t bulk_queued(raft::node_id to) const override {
    const peer* p = owner_.find_peer(to.value());
    return p != nullptr ? p->lanes[bulk_lane].raft_queued : 0;
  }
  void set_receiver(receiver r) override { recv = std::move(r); }
  receiver recv;

 private:
  peer_links& owner_;
};

result<std::unique_ptr<peer_links>> peer_links::open(io::event_loop& loop, options o) {
  WEIR_ASSERT(o.self != 0, "peer_links: node id 0");
  for (auto& [id, addr] : o.peers)
    WEIR_ASSERT(id != 0, "peer_links: peer id 0 ({}:{})", addr.host, addr.port);
  WEIR_ASSERT(o.core_lane < o.core_lanes && o.core_lanes <= 0xffff, "peer_links: core lane {} of {}",
              o.core_lane, o.core_lanes);
  std::unique_ptr<peer_links> links(new peer_links(loop, std::move(o)));
  if (links->opts_.core_lane == 0) {  // core lane 0 accepts for every lane
    auto fd = listen_on(links->opts_.listen, links->opts_.receive_buffer);
    if (!fd) return fd.err();
    auto port = io::local_port(*fd);
    if (!port) {
      ::close(*fd);
      return port.err();
    }
    links->listen_port_ = *port;
    links->listener_ = std::make_unique<listener>(*links, *fd);
    if (!loop.add_fd(*fd, EPOLLIN, links->listener_.get())) {
      return make_error(io::socket_errc::system, std::string("epoll_ctl: ") + std::strerror(errno));
    }
  }
  for (auto& [id, p] : links->peers_)
    for (out_link& l : p->lanes) links->dial(l);
  return links;
}

peer_links::peer_links(io::event_loop& loop, options o)
    : loop_(loop), opts_(std::move(o)), raft_(std::make_unique<raft_adapter>(*this)) {
  for (auto& [id, addr] : opts_.peers) {
    if (id != opts_.self) add_peer_state(id, addr);
  }
}

peer_links::peer& peer_links::add_peer_state(std::uint64_t id, const peer_address& addr) {
  auto p = std::make_unique<peer>();
  p->id = id;
  p->addr = addr;
  for (std::uint32_t lane = 0; lane < lane_count; ++lane) {
    out_link& l = p->lanes[lane];
    l.owner = p.get();
    l.lane = lane;
    l.hello = encode_hello(peer_hello{.sender = opts_.self,
                                      .link_lane = lane,
                                      .core_lane = opts_.core_lane,
                                      .core_lanes = opts_.core_lanes,
                                      .incarnation = opts_.incarnation});
  }
  return *peers_.insert_or_assign(id, std::move(p)).first->second;
}

peer_links::~peer_links() {
  if (turn_end_timer_ != 0) loop_.cancel_timer(turn_end_timer_);
  for (auto& [id, p] : peers_) {
    for (out_link& l : p->lanes) {
      if (l.retry_timer != 0) loop_.cancel_timer(l.retry_timer);
      if (l.handshake_timer != 0) loop_.cancel_timer(l.handshake_timer);
      l.tls.reset();  // before its descriptor closes
      l.out.reset();
    }
  }
  conns_.clear();
  retired_conns_.clear();
  retired_streams_.clear();
  listener_.reset();
}

raft::transport& peer_links::raft_transport() {
  return *raft_;
}

// Frames queued during a turn go out together at its end (a timer of 0 ms runs after the turn's events),
// and connections closed during the turn are freed only then.
void peer_links::schedule_turn_end() {
  if (turn_end_timer_ != 0) return;
  turn_end_timer_ = loop_.add_timer(0ms, [this] {
    turn_end_timer_ = 0;
    on_turn_end();
  });
}

void peer_links::on_turn_end() {
  retired_conns_.clear();
  retired_streams_.clear();
  retired_peers_.clear();
  auto dirty = std::move(dirty_);
  dirty_.clear();
  for (out_link* l : dirty) {
    l->dirty = false;
    flush(*l);
  }
  // Last: the handler may add a peer (the replicator links a node it removed, to tell it so).
  auto strangers = std::move(strangers_);
  strangers_.clear();
  if (on_stranger_)
    for (std::uint64_t id : strangers) on_stranger_(id);
}

status peer_links::add_peer(std::uint64_t id, std::string_view address) {
  WEIR_ASSERT(id != 0, "peer_links: add_peer of node 0 ({})", address);
  auto a = parse_peer_address(address);
  if (!a) return a.err();
  if (a->empty() || a->port == 0) {
    return make_error(std::errc::invalid_argument,
                      "node " + std::to_string(id) + ": no port in '" + std::string(address) + "'");
  }
  if (id == opts_.self) return {};
  opts_.peers[id] = *a;
  auto it = peers_.find(id);
  if (it != peers_.end()) {
    peer& p = *it->second;
    if (p.addr == *a) return {};
    log::info("peer_links: node {}: node {} moves from {}:{} to {}:{}", opts_.self, id, p.addr.host,
              p.addr.port, a->host, a->port);
    p.addr = *a;
    for (out_link& l : p.lanes)
      if (l.out) lose(l, "the peer moved", 0);  // redialled after the backoff, at the new address
    return {};
  }
  peer& added = add_peer_state(id, *a);
  log::info("peer_links: node {}: node {} ({}:{}) added", opts_.self, id, a->host, a->port);
  for (out_link& l : added.lanes) dial(l);
  return {};
}

void peer_links::remove_peer(std::uint64_t id) {
  opts_.peers.erase(id);
  auto it = peers_.find(id);
  if (it == peers_.end()) return;
  std::unique_ptr<peer> gone = std::move(it->second);
  peers_.erase(it);
  peer& p = *gone;
  for (out_link& l : p.lanes) {
    if (l.retry_timer != 0) loop_.cancel_timer(l.retry_timer);
    l.retry_timer = 0;
    if (l.handshake_timer != 0) loop_.cancel_timer(l.handshake_timer);
    l.handshake_timer = 0;
    ++l.out_gen;  // callbacks of its stream, still due this turn, do nothing
    l.tls.reset();
    l.up = false;
    if (l.out) {
      l.out->close();
      retired_streams_.push_back(std::move(l.out));
    }
    std::erase(dirty_, &l);
    l.queue.clear();
    l.queued_bytes = 0;
    l.raft_queued = 0;
  }
  for (in_conn* c : p.in)
    if (c != nullptr) retire(c);
  retired_peers_.push_back(std::move(gone));
  schedule_turn_end();
  log::info("peer_links: node {}: node {} ({}:{}) removed", opts_.self, id, p.addr.host, p.addr.port);
  // It left the cluster: the same id may join again on a new data directory (a new incarnation).
  forget_incarnation(id);
}

peer_links::handed_conn::~handed_conn() {
  tls.reset();  // before the descriptor closes
  if (fd >= 0) ::close(fd);
}

void peer_links::adopt(std::unique_ptr<handed_conn> h) {
  auto c = std::make_unique<in_conn>(*this, std::exchange(h->fd, -1), h->remote);
  in_conn* raw = c.get();
  conns_.push_back(std::move(c));
  raw->adopt(std::move(h));
}

void peer_links::accept_all() {
  for (;;) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    int fd =
        ::accept4(listener_->fd(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors: the backlog waits for the next connection's edge (peers redial).
      warn_limited(fmt::format("peer_links: node {}: accept: {}", opts_.self, std::strerror(errno)));
      return;
    }
    char ip[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
    auto c = std::make_unique<in_conn>(*this, fd, fmt::format("{}:{}", ip, ntohs(addr.sin_port)));
    if (!c->start()) {
      warn_limited(fmt::format("peer_links: node {}: epoll_ctl: {}", opts_.self, std::strerror(errno)));
      continue;
    }
    conns_.push_back(std::move(c));
  }
}

bool peer_links::identify(in_conn* c, std::uint64_t id, std::uint32_t lane) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return false;  // unknown, or self
  peer& p = *it->second;
  // A newer connection from the same node on the same lane: it restarted (or lost its link and
  // redialled) and the old connection is dead or about to be.
  if (p.in[lane] != nullptr && p.in[lane] != c) retire(p.in[lane]);
  p.in[lane] = c;
  // The peer is up: if our own links to it wait out a backoff, or a connect that has been pending for a
  // while (SYNs to a host that was down; with TLS, a handshake the old process never answered), dial now.
  for (out_link& l : p.lanes) {
    if (!l.out && l.retry_timer != 0) {
      loop_.cancel_timer(l.retry_timer);
      dial(l);
    } else if (l.out && !l.up && loop_.now_ms() - l.dial_ms > stale_connect.count()) {
      lose(l, "connect pending", 0);
      loop_.cancel_timer(l.retry_timer);
      dial(l);
    }
  }
  return true;
}

void peer_links::retire(in_conn* c) {
  c->close();
  if (auto it = peers_.find(c->peer_id()); it != peers_.end() && it->second->in[c->lane()] == c)
    it->second->in[c->lane()] = nullptr;
  auto it = std::find_if(conns_.begin(), conns_.end(), [c](const auto& u) { return u.get() == c; });
  if (it == conns_.end()) return;
  retired_conns_.push_back(std::move(*it));
  conns_.erase(it);
  schedule_turn_end();
}

void peer_links::count_received(std::uint64_t from, std::size_t bytes) {
  if (auto it = peers_.find(from); it != peers_.end()) it->second->bytes_received += bytes;
}

void peer_links::deliver(std::uint64_t from, std::uint8_t channel, std::span<const std::byte> payload) {
  if (channel == 0 && raft_->recv) {
    raft_->recv(raft::node_id{from}, payload);
  } else if (receiver_) {
    receiver_(from, channel, payload);
  }
}

std::vector<peer_links::link_status> peer_links::status() const {
  std::vector<link_status> out;
  out.reserve(peers_.size());
  for (const auto& [id, p] : peers_) {
    const out_link& bulk = p->lanes[bulk_lane];
    const out_link& urgent = p->lanes[urgent_lane];
    out.push_back(link_status{.peer = id,
                              .out_connected = p->out_up(),
                              .in_connected = p->in_up(),
                              .bytes_sent = p->bytes_sent,
                              .bytes_received = p->bytes_received,
                              .connects = p->connects,
                              .drops = p->drops,
                              .dropped_frames = p->dropped_frames,
                              .tls_refused = p->tls_refused,
                              .queued_bytes = p->queued_bytes(),
                              .max_queue_ms = std::max(bulk.max_queue_ms, urgent.max_queue_ms),
                              .max_urgent_queue_ms = urgent.max_queue_ms,
                              .read_yields = p->read_yields});
  }
  return out;
}

peer_links::peer* peer_links::find_peer(std::uint64_t id) {
  auto it = peers_.find(id);
  return it != peers_.end() ? it->second.get() : nullptr;
}

void peer_links::warn_limited(std::string msg) {
  const std::int64_t now = loop_.now_ms();
  if (now - last_warn_ms_ < 1000) {
    ++suppressed_warnings_;
    return;
  }
  last_warn_ms_ = now;
  if (suppressed_warnings_ > 0) {
    log::warn("{} ({} similar warnings suppressed in the last second)", msg, suppressed_warnings_);
  } else {
    log::warn("{}", msg);
  }
  suppressed_warnings_ = 0;
}

}  // namespace weir::cluster

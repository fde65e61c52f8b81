// Helpers of the peer_links tests (peer_links_test.cc, peer_links_tls_test.cc): an event loop on its own
// thread, reserved loopback ports, a cluster of peer_links on one loop, and raw connections that speak
// the wire format as documented in peer_links.h (written independently here).
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/peer_links.h"
#include "io/socket.h"
#include "storage/crc32c.h"

namespace weir::cluster::peer_links_testing {

using namespace std::chrono_literals;

// The event loop on its own thread; the test talks to it with call() and waits with wait_for().
class loop_thread {
 public:
  loop_thread() : thread_([this] { loop.run(); }) {}
  ~loop_thread() {
    loop.stop();
    thread_.join();
  }
  // Runs f on the loop and returns its result.
  template <class F>
  auto call(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto done = task.get_future();
    loop.post([&task] { task(); });
    return done.get();
  }
  // Waits until pred() (evaluated on the loop) holds; false if it did not within the limit.
  bool wait_for(std::function<bool()> pred, std::chrono::milliseconds limit = 3s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (call(pred)) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  io::event_loop loop{0};

 private:
  std::thread thread_;
};

// A loopback port bound without listening: nobody else takes it while it is held, and dials to it are
// refused. SO_REUSEADDR on both sockets lets the node's listener bind it meanwhile.
class reserved_port {
 public:
  reserved_port() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    port_ = *io::local_port(fd_);
  }
  ~reserved_port() { ::close(fd_); }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

struct message {
  std::uint64_t from;
  std::uint8_t channel;
  std::string text;
};

inline std::vector<std::byte> bytes(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}
inline std::string text(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A cluster of nodes on one loop; node i listens on ports[i].
class cluster {
 public:
  explicit cluster(int n) {
    for (int i = 1; i <= n; ++i) ports_.emplace(i, std::make_unique<reserved_port>());
  }
  ~cluster() {
    lt.call([&] {
      nodes_.clear();
      return 0;
    });
  }
  peer_links::options options(std::uint64_t self) const {
    peer_links::options o;
    o.self = self;
    o.listen = {"127.0.0.1", ports_.at(self)->port()};
    for (auto& [id, r] : ports_) o.peers[id] = {"127.0.0.1", r->port()};
    return o;
  }
  // Opens node `id` (its receiver records every frame) on the loop thread.
  void start(std::uint64_t id) { start(options(id)); }
  void start(peer_links::options o) {
    auto id = o.self;
    lt.call([&] {
      auto r = peer_links::open(lt.loop, std::move(o));
      EXPECT_TRUE(r) << r.err().reason;
      if (!r) return 0;
      auto& n = nodes_[id];
      n.links = std::move(*r);
      n.got.clear();
      n.links->set_receiver([&n](std::uint64_t from, std::uint8_t ch, std::span<const std::byte> p) {
        n.got.push_back({from, ch, text(p)});
      });
      return 0;
    });
  }
  void stop(std::uint64_t id) {
    lt.call([&] {
      nodes_.erase(id);
      return 0;
    });
  }
  peer_links& links(std::uint64_t id) { return *nodes_.at(id).links; }
  // Loop thread only (inside call / wait_for).
  std::vector<message>& got(std::uint64_t id) { return nodes_.at(id).got; }
  std::uint16_t port(std::uint64_t id) const { return ports_.at(id)->port(); }
  void send(std::uint64_t from, std::uint64_t to, std::uint8_t ch, std::string s) {
    lt.call([&] {
      links(from).send(to, ch, bytes(s));
      return 0;
    });
  }
  bool wait_received(std::uint64_t id, std::size_t n) {
    return lt.wait_for([&] { return got(id).size() >= n; });
  }
  std::vector<message> received(std::uint64_t id) {
    return lt.call([&] { return got(id); });
  }
  peer_links::link_status status(std::uint64_t id, std::uint64_t peer) {
    return lt.call([&] {
      for (auto& s : links(id).status()) {
        if (s.peer == peer) return s;
      }
      ADD_FAILURE() << "no status for peer " << peer;
      return peer_links::link_status{};
    });
  }

  loop_thread lt;

 private:
  struct node {
    std::unique_ptr<peer_links> links;
    std::vector<message> got;
  };
  std::map<std::uint64_t, std::unique_ptr<reserved_port>> ports_;
  std::map<std::uint64_t, node> nodes_;
};

// Checks that `got` holds, per sender and channel, "<from>-<to>-<ch>-<i>" for i = 0, 1, ... in order.
inline void expect_in_order(const std::vector<message>& got, std::uint64_t to, int per_stream) {
  std::map<std::pair<std::uint64_t, int>, int> next;
  for (auto& m : got) {
    int& i = next[{m.from, m.channel}];
    EXPECT_EQ(m.text, std::to_string(m.from) + "-" + std::to_string(to) + "-" + std::to_string(m.channel) +
                          "-" + std::to_string(i));
    ++i;
  }
  for (auto& [key, n] : next) EXPECT_EQ(n, per_stream) << "from " << key.first << " channel " << key.second;
}

// --- Raw connections: the wire format as documented in peer_links.h, written independently here.

inline void put_le(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
inline std::uint32_t crc(std::string_view s) {
  return storage::crc32c(std::as_bytes(std::span(s.data(), s.size())));
}
// Version 2 named the connection's lane (0 bulk, 1 urgent), version 1 did not; version 3 also names the
// sender's count of core lanes, version 4 (the current one) also its incarnation.
inline std::string hello(std::uint64_t id, std::uint32_t version = 4, std::uint32_t lane = 0,
                         std::uint32_t core_lanes = 1, std::uint64_t incarnation = 0) {
  std::string h = "weirpeer";
  put_le(h, version, 4);
  put_le(h, id, 8);
  if (version != 1) put_le(h, lane, 4);
  if (version >= 3) put_le(h, core_lanes, 4);
  if (version >= 4) put_le(h, incarnation, 8);
  put_le(h, crc(h), 4);
  return h;
}
inline std::string frame(std::uint8_t ch, std::string_view payload, bool bad_crc = false) {
  std::string f;
  put_le(f, payload.size(), 4);
  f.push_back(static_cast<char>(ch));
  put_le(f, crc(payload) ^ (bad_crc ? 1u : 0u), 4);
  f.append(payload);
  return f;
}

// A blocking client socket (the loop runs on its own thread).
class raw_client {
 public:
  explicit raw_client(std::uint16_t port) {
    auto fd = io::connect_tcp("127.0.0.1", port, /*non_blocking=*/false);
    EXPECT_TRUE(fd);
    fd_ = fd ? *fd : -1;
    timeval tv{3, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~raw_client() { ::close(fd_); }
  void send(std::string_view s) {
    ASSERT_EQ(::send(fd_, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size()));
  }
  // True once the node closed the connection (end of stream or reset); false on the 3 s timeout.
  bool closed_by_node() {
    char b[16];
    auto n = ::recv(fd_, b, sizeof b, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  int fd_ = -1;
};

constexpr std::uint32_t core_lanes = 2;

// Core lanes (peer_links.h): nodes 1 and 2, each with two core lanes, all on one loop (a server runs each
// lane on its own loop and posts handed connections there: here the post is to the same loop).
class laned_cluster {
 public:
  // `tune` adjusts each lane's options (TLS).
  explicit laned_cluster(std::function<void(peer_links::options&)> tune = {}) {
    lt.call([&] {
      for (std::uint64_t id : {1u, 2u}) {
        for (std::uint32_t core = 0; core < core_lanes; ++core) {
          peer_links::options o;
          o.self = id;
          o.listen = {"127.0.0.1", ports_.at(id).port()};
          for (auto& [peer, r] : ports_) o.peers[peer] = {"127.0.0.1", r.port()};
          o.core_lane = core;
          o.core_lanes = core_lanes;
          if (tune) tune(o);
          auto r = peer_links::open(lt.loop, std::move(o));
          EXPECT_TRUE(r) << r.err().reason;
          if (!r) return 0;
          lane& l = lanes_[{id, core}];
          l.links = std::move(*r);
          l.links->set_receiver([&l](std::uint64_t from, std::uint8_t ch, std::span<const std::byte> p) {
            l.got.push_back({from, ch, text(p)});
          });
        }
        lanes_.at({id, 0}).links->set_handoff(
            [this, id](std::uint32_t core, std::unique_ptr<peer_links::handed_conn> c) {
              ++handed_[id];
              auto held = std::make_shared<std::unique_ptr<peer_links::handed_conn>>(std::move(c));
              lt.loop.post([this, id, core, held] { lanes_.at({id, core}).links->adopt(std::move(*held)); });
            });
      }
      return 0;
    });
  }
  ~laned_cluster() {
    lt.call([&] {
      lanes_.clear();
      return 0;
    });
  }
  peer_links& links(std::uint64_t id, std::uint32_t core) { return *lanes_.at({id, core}).links; }
  std::vector<message>& got(std::uint64_t id, std::uint32_t core) { return lanes_.at({id, core}).got; }
  std::uint16_t port(std::uint64_t id) { return ports_.at(id).port(); }
  int handed(std::uint64_t id) { return handed_[id]; }

  loop_thread lt;

 private:
  struct lane {
    std::unique_ptr<peer_links> links;
    std::vector<message> got;
  };
  std::map<std::uint64_t, reserved_port> ports_{[] {
    std::map<std::uint64_t, reserved_port> m;
    m[1];
    m[2];
    return m;
  }()};
  std::map<std::pair<std::uint64_t, std::uint32_t>, lane> lanes_;
  std::map<std::uint64_t, int> handed_;
};

}  // namespace weir::cluster::peer_links_testing

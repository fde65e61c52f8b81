// weir-http-floor: the least work an HTTP/1.1 server can do per request on this machine, measured
// beside weir and nginx by bench/http/run.sh. It is not an HTTP server: it finds the end of each
// request head ("\r\n\r\n"), parses nothing, and answers every request with the same plaintext
// response (Server, Date, Content-Type, Content-Length, "Hello, World!"), one recv and one send per
// batch of pipelined requests. What it costs per request is the kernel's TCP path plus a memcpy: the
// floor under any real server's CPU per request here.
//
// Two event mechanisms, for the engine's "epoll or io_uring" choice (docs/http-engine.md):
//   --mode epoll   edge-triggered epoll, recv until a short read, one send per read;
//   --mode uring   io_uring: multishot accept, multishot recv into a provided-buffer ring, one send
//                  SQE per read, one io_uring_submit_and_wait per loop turn (SINGLE_ISSUER and
//                  DEFER_TASKRUN, so completions are reaped only when the loop asks).
//
//   weir-http-floor --listen 127.0.0.1:18080 --mode epoll
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "io/socket.h"

namespace {

volatile std::sig_atomic_t stopping = 0;

// The fixed response, its Date refreshed once a second.
class response {
 public:
  std::string_view text() {
    const std::time_t now = std::time(nullptr);
    if (now != when_) {
      when_ = now;
      char date[64];
      std::tm tm{};
      gmtime_r(&now, &tm);
      std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
      text_ = std::string("HTTP/1.1 200 OK\r\nServer: weir\r\nDate: ") + date +
              "\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
    }
    return text_;
  }

 private:
  std::time_t when_ = 0;
  std::string text_;
};

// One connection's unanswered bytes (a request split across reads) and unsent output.
struct peer {
  std::string partial;
  std::string out;
};

// Appends one response to `out` per complete request head in partial + data; keeps the tail.
void answer(peer& c, std::string_view data, response& r) {
  std::string_view in = data;
  if (!c.partial.empty()) {
    c.partial.append(data);
    in = c.partial;
  }
  const std::string_view text = r.text();
  std::size_t pos = 0;
  for (;;) {
    const void* end = memmem(in.data() + pos, in.size() - pos, "\r\n\r\n", 4);
    if (end == nullptr) break;
    c.out.append(text);
    pos = static_cast<std::size_t>(static_cast<const char*>(end) - in.data()) + 4;
  }
  std::string tail(in.substr(pos));
  c.partial = std::move(tail);
}

int listen_on(const std::string& listen) {
  auto hp = weir::io::parse_host_port(listen);
  if (!hp) {
    std::fprintf(stderr, "weir-http-floor: %s\n", hp.err().reason.c_str());
    return -1;
  }
  auto fd = weir::io::listen_tcp(hp->host, hp->port);
  if (!fd) {
    std::fprintf(stderr, "weir-http-floor: %s\n", fd.err().reason.c_str());
    return -1;
  }
  return *fd;
}

int run_epoll(int listener) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event lev{};
  lev.events = EPOLLIN;
  lev.data.fd = listener;
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &lev);
  std::vector<peer> peers;
  response r;
  static char in[64 * 1024];
  epoll_event events[512];
  while (stopping == 0) {
    const int n = epoll_wait(ep, events, 512, 200);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listener) {
        for (int c; (c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          weir::io::set_nodelay(c);
          if (static_cast<std::size_t>(c) >= peers.size()) peers.resize(static_cast<std::size_t>(c) + 1);
          peers[static_cast<std::size_t>(c)] = peer{};
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
          ev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
        }
        continue;
      }
      peer& c = peers[static_cast<std::size_t>(fd)];
      bool closed = false;
      for (;;) {
        const ssize_t got = weir::io::recv_bytes(fd, in, sizeof in, 0);
        if (got <= 0) {
          closed = got == 0 || (errno != EAGAIN && errno != EINTR);
          break;
        }
        answer(c, std::string_view(in, static_cast<std::size_t>(got)), r);
        if (static_cast<std::size_t>(got) < sizeof in) break;
      }
      while (!closed && !c.out.empty()) {
        const ssize_t sent = weir::io::send_bytes(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (sent < 0) {
          closed = errno != EAGAIN && errno != EINTR;
          break;  // EAGAIN: EPOLLOUT (edge-triggered) calls us back
        }
        c.out.erase(0, static_cast<std::size_t>(sent));
      }
      if (closed) {
        close(fd);
        c = peer{};
      }
    }
  }
  close(ep);
  return 0;
}

int run_uring(int listener) {
  enum kind : std::uint64_t { accept_op = 1, recv_op = 2, send_op = 3 };
  constexpr unsigned buffers = 1024;
  constexpr unsigned buffer_bytes = 16 * 1024;
  constexpr int group = 1;
  const auto tag = [](kind k, int fd) {
    return (static_cast<std::uint64_t>(k) << 32) | static_cast<std::uint32_t>(fd);
  };

  io_uring ring;
  io_uring_params params{};
  params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  params.cq_entries = 16384;
  if (int e = io_uring_queue_init_params(4096, &ring, &params); e < 0) {
    std::fprintf(stderr, "weir-http-floor: io_uring_queue_init: %s\n", std::strerror(-e));
    return 1;
  }
  const std::size_t ring_bytes = buffers * sizeof(io_uring_buf);
  void* mem = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  auto* br = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uint64_t>(br);
  reg.ring_entries = buffers;
  reg.bgid = group;
  if (int e = io_uring_register_buf_ring(&ring, &reg, 0); e < 0) {
    std::fprintf(stderr, "weir-http-floor: io_uring_register_buf_ring: %s\n", std::strerror(-e));
    return 1;
  }
  io_uring_buf_ring_init(br);
  std::vector<char> pool(std::size_t{buffers} * buffer_bytes);
  const auto give_back = [&](unsigned bid, int offset) {
    io_uring_buf_ring_add(br, pool.data() + std::size_t{bid} * buffer_bytes, buffer_bytes,
                          static_cast<unsigned short>(bid), io_uring_buf_ring_mask(buffers), offset);
  };
  for (unsigned i = 0; i < buffers; ++i) give_back(i, static_cast<int>(i));
  io_uring_buf_ring_advance(br, buffers);

  const auto next_sqe = [&] {
    io_uring_sqe* s = io_uring_get_sqe(&ring);
    if (s == nullptr) {
      io_uring_submit(&ring);
      s = io_uring_get_sqe(&ring);
    }
    return s;
  };
  const auto arm_accept = [&] {
    io_uring_sqe* s = next_sqe();
    io_uring_prep_multishot_accept(s, listener, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, tag(accept_op, listener));
  };
  const auto arm_recv = [&](int fd) {
    io_uring_sqe* s = next_sqe();
    io_uring_prep_recv_multishot(s, fd, nullptr, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = group;
    io_uring_sqe_set_data64(s, tag(recv_op, fd));
  };
  std::vector<peer> peers;
  std::vector<std::size_t> in_flight;  // bytes of out being sent, per fd
  std::vector<bool> closing;           // peer gone, close once the send in flight completes
  const auto send_out = [&](int fd) {
    peer& c = peers[static_cast<std::size_t>(fd)];
    std::size_t& flying = in_flight[static_cast<std::size_t>(fd)];
    if (flying != 0 || c.out.empty()) return;
    flying = c.out.size();
    io_uring_sqe* s = next_sqe();
    io_uring_prep_send(s, fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, tag(send_op, fd));
  };
  response r;
  arm_accept();
  __kernel_timespec tick{0, 200'000'000};
  while (stopping == 0) {
    io_uring_cqe* first = nullptr;
    io_uring_submit_and_wait_timeout(&ring, &first, 1, &tick, nullptr);
    io_uring_cqe* cqe;
    unsigned head;
    unsigned seen = 0;
    int returned = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      const std::uint64_t data = io_uring_cqe_get_data64(cqe);
      const auto k = static_cast<kind>(data >> 32);
      const int fd = static_cast<int>(static_cast<std::uint32_t>(data));
      if (k == accept_op) {
        if (cqe->res >= 0) {
          const int c = cqe->res;
          weir::io::set_nodelay(c);
          if (static_cast<std::size_t>(c) >= peers.size()) {
            peers.resize(static_cast<std::size_t>(c) + 1);
            in_flight.resize(static_cast<std::size_t>(c) + 1);
            closing.resize(static_cast<std::size_t>(c) + 1);
          }
          peers[static_cast<std::size_t>(c)] = peer{};
          in_flight[static_cast<std::size_t>(c)] = 0;
          closing[static_cast<std::size_t>(c)] = false;
          arm_recv(c);
        }
        if ((cqe->flags & IORING_CQE_F_MORE) == 0) arm_accept();
      } else if (k == recv_op) {
        if (cqe->res > 0) {
          const unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
          answer(peers[static_cast<std::size_t>(fd)],
                 std::string_view(pool.data() + std::size_t{bid} * buffer_bytes,
                                  static_cast<std::size_t>(cqe->res)),
                 r);
          give_back(bid, returned++);
          send_out(fd);
          if ((cqe->flags & IORING_CQE_F_MORE) == 0) arm_recv(fd);
        } else if (cqe->res == -ENOBUFS) {
          arm_recv(fd);
        } else if ((cqe->flags & IORING_CQE_F_MORE) == 0) {
          // End of stream or error. A send still in flight reads c.out: close when it completes, so
          // the descriptor (and its peer slot) cannot be reused under it.
          if (in_flight[static_cast<std::size_t>(fd)] == 0) {
            close(fd);
          } else {
            closing[static_cast<std::size_t>(fd)] = true;
          }
        }
      } else if (k == send_op) {
        peer& c = peers[static_cast<std::size_t>(fd)];
        std::size_t& flying = in_flight[static_cast<std::size_t>(fd)];
        if (cqe->res > 0) c.out.erase(0, static_cast<std::size_t>(cqe->res));
        flying = 0;
        if (closing[static_cast<std::size_t>(fd)]) {
          closing[static_cast<std::size_t>(fd)] = false;
          close(fd);
        } else if (cqe->res >= 0) {
          send_out(fd);
        }
      }
    }
    if (returned > 0) io_uring_buf_ring_advance(br, returned);
    io_uring_cq_advance(&ring, seen);
  }
  io_uring_queue_exit(&ring);
  munmap(mem, ring_bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"weir-http-floor: the per-request CPU floor of this machine's TCP path (bench only)"};
  std::string listen = "127.0.0.1:8080";
  std::string mode = "epoll";
  app.add_option("--listen", listen, "HOST:PORT to listen on");
  app.add_option("--mode", mode, "epoll or uring")->check(CLI::IsMember({"epoll", "uring"}));
  CLI11_PARSE(app, argc, argv);
  const int listener = listen_on(listen);
  if (listener < 0) return 1;
  struct sigaction sa {};
  sa.sa_handler = [](int) { stopping = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::fprintf(stderr, "weir-http-floor: %s on %s\n", mode.c_str(), listen.c_str());
  const int rc = mode == "uring" ? run_uring(listener) : run_epoll(listener);
  close(listener);
  return rc;
}

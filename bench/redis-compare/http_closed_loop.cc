// http_closed_loop: a closed-loop HTTP/1.1 load generator that times every request, for
// bench/redis-compare/run.sh. Each of C connections sends one POST of SIZE bytes (connection i to
// /v1/stream/fill-i, then every 7th stream on, modulo STREAMS), waits for its answer, and sends the next.
//
// Why not wrk: at ~100k requests/s on this 2-CPU machine wrk's latency figures break Little's law by up
// to 10x (mean latency x requests/s came out at 300-600 requests in flight with 64 connections), so its
// tail percentiles there say nothing about the server. Here every request's latency is taken with
// CLOCK_MONOTONIC from just before its write to the end of its response, and all of them are kept.
//
//   http_closed_loop HOST PORT CONNS SECS SIZE STREAMS [WARMUP_SECS]
// Prints one line: requests req_s p50_ms p99_ms p999_ms max_ms mean_ms errors (after the warm-up).
// Build: c++ -O2 -std=c++20 -o http_closed_loop http_closed_loop.cc
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct conn {
  int fd = -1;
  std::size_t next_stream = 0;
  std::string out;
  std::size_t written = 0;
  std::string in;
  std::uint64_t started = 0;
};

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

// Length of the complete response at the front of `in`, or 0 if it is not all there yet. Handles a
// Content-Length body; weir answers an append with 204 and no body.
std::size_t response_length(const std::string& in, bool& ok) {
  const std::size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos) return 0;
  ok = in.compare(0, 10, "HTTP/1.1 2") == 0;
  std::size_t body = 0;
  for (std::size_t p = in.find("\r\n"); p < head_end; p = in.find("\r\n", p + 2)) {
    if (strncasecmp(in.data() + p + 2, "content-length:", 15) == 0) {
      body = std::strtoull(in.data() + p + 17, nullptr, 10);
    }
  }
  if (in.size() < head_end + 4 + body) return 0;
  return head_end + 4 + body;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s HOST PORT CONNS SECS SIZE STREAMS [WARMUP_SECS]\n", argv[0]);
    return 2;
  }
  const char* host = argv[1];
  const int port = std::atoi(argv[2]);
  const int conns = std::atoi(argv[3]);
  const double secs = std::atof(argv[4]);
  const std::size_t size = std::strtoull(argv[5], nullptr, 10);
  const std::size_t streams = std::strtoull(argv[6], nullptr, 10);
  const double warmup = argc > 7 ? std::atof(argv[7]) : 0;
  const std::string body(size, 'x');
  // HCL_SLOW_MS: print every request at least this slow (its start, in s after the warm-up) to stderr.
  const std::uint64_t slow_us = std::getenv("HCL_SLOW_MS") != nullptr
                                    ? std::strtoull(std::getenv("HCL_SLOW_MS"), nullptr, 10) * 1000
                                    : 0;

  int ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  std::vector<conn> cs(static_cast<std::size_t>(conns));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) die("inet_pton");

  auto send_next = [&](conn& c) {
    const std::size_t stream = c.next_stream;
    c.next_stream = (c.next_stream + 7) % streams;  // 7 is prime to the usual stream counts: all get visited
    c.out = "POST /v1/stream/fill-" + std::to_string(stream) + " HTTP/1.1\r\nHost: " + host +
            "\r\nContent-Type: application/octet-stream\r\nContent-Length: " + std::to_string(size) +
            "\r\n\r\n" + body;
    c.written = 0;
    c.started = now_ns();
    while (c.written < c.out.size()) {
      ssize_t n = ::write(c.fd, c.out.data() + c.written, c.out.size() - c.written);
      if (n < 0) {
        if (errno == EAGAIN) break;  // EPOLLOUT finishes it
        die("write");
      }
      c.written += static_cast<std::size_t>(n);
    }
  };

  for (int i = 0; i < conns; ++i) {
    conn& c = cs[static_cast<std::size_t>(i)];
    c.fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (c.fd < 0) die("socket");
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("connect");
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK) != 0) die("fcntl");
    c.next_stream = static_cast<std::size_t>(i) % streams;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) die("epoll_ctl");
  }

  const std::uint64_t begin = now_ns();
  const std::uint64_t measure_from = begin + static_cast<std::uint64_t>(warmup * 1e9);
  const std::uint64_t end = measure_from + static_cast<std::uint64_t>(secs * 1e9);
  std::vector<std::uint32_t> lat_us;  // every measured request's latency
  lat_us.reserve(1 << 22);
  std::uint64_t errors = 0;
  for (conn& c : cs) send_next(c);

  std::vector<epoll_event> evs(256);
  char buf[65536];
  while (now_ns() < end) {
    int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 100);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    for (int k = 0; k < n; ++k) {
      conn& c = cs[evs[static_cast<std::size_t>(k)].data.u32];
      if (c.written < c.out.size()) {
        ssize_t w = ::write(c.fd, c.out.data() + c.written, c.out.size() - c.written);
        if (w > 0) c.written += static_cast<std::size_t>(w);
      }
      for (;;) {
        ssize_t r = ::read(c.fd, buf, sizeof buf);
        if (r < 0) {
          if (errno == EAGAIN) break;
          die("read");
        }
        if (r == 0) {
          std::fprintf(stderr,
                       "http_closed_loop: the server closed a connection (%zu bytes unparsed: %.200s)\n",
                       c.in.size(), c.in.c_str());
          return 1;
        }
        c.in.append(buf, static_cast<std::size_t>(r));
      }
      bool ok = false;
      if (std::size_t len = response_length(c.in, ok); len > 0) {
        const std::uint64_t t = now_ns();
        c.in.erase(0, len);
        if (c.started >= measure_from && t <= end) {
          lat_us.push_back(static_cast<std::uint32_t>((t - c.started) / 1000));
          if (slow_us > 0 && lat_us.back() >= slow_us) {
            std::fprintf(stderr, "slow %.3f s %.3f ms\n", (c.started - measure_from) / 1e9,
                         lat_us.back() / 1000.0);
          }
          if (!ok) ++errors;
        }
        send_next(c);
      }
    }
  }
  std::sort(lat_us.begin(), lat_us.end());
  const std::size_t count = lat_us.size();
  auto pct = [&](double p) {
    if (count == 0) return 0.0;
    std::size_t i = std::min(count - 1, static_cast<std::size_t>(p * static_cast<double>(count)));
    return lat_us[i] / 1000.0;
  };
  double sum = 0;
  for (std::uint32_t v : lat_us) sum += v;
  std::printf("%zu %.0f %.3f %.3f %.3f %.3f %.3f %llu\n", count, static_cast<double>(count) / secs, pct(0.50),
              pct(0.99), pct(0.999), count ? lat_us.back() / 1000.0 : 0.0, count ? sum / count / 1000.0 : 0.0,
              static_cast<unsigned long long>(errors));
  return 0;
}

#include "http/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "http/admission.h"
#include "http/connection.h"
#include "http/loop_context.h"
#include "io/socket.h"

namespace weir::http {
namespace {
constexpr std::int64_t exhausted_log_interval_ms = 10'000;
constexpr std::chrono::milliseconds accept_retry_delay{100};

int open_spare() {
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

constexpr std::string_view busy_response =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
    "Retry-After: 1\r\nConnection: close\r\n\r\ntoo many connections\r\n";
constexpr std::string_view per_client_response =
    "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\nContent-Length: 40\r\n"
    "Retry-After: 1\r\nConnection: close\r\n\r\ntoo many connections from this address\r\n";
}  // namespace

listener::listener(loop_context& ctx, int fd) : ctx_(&ctx), fd_(fd) {}

listener::~listener() {
  close();
}

bool listener::start() {
  spare_fd_ = open_spare();
  registered_ = ctx_->loop->add_fd(fd_, EPOLLIN, this);
  return registered_;
}

void listener::close() {
  if (retry_pending_) ctx_->loop->cancel_timer(retry_timer_);
  retry_pending_ = false;
  if (spare_fd_ >= 0) ::close(spare_fd_);
  spare_fd_ = -1;
  if (fd_ < 0) return;
  if (registered_) ctx_->loop->remove_fd(fd_);
  ::close(fd_);
  fd_ = -1;
}

void listener::refuse(int fd, std::string_view response) {
  // Best effort: the socket buffer of a fresh connection is empty, so this non-blocking send normally
  // succeeds whole.
  ctx_->rejected.add();  // before the send: a client that sees the answer also sees the count
  // A TLS client could not read a plaintext answer (and a handshake costs more than the refusal saves).
  if (!ctx_->opts->tls && !ctx_->opts->make_transport) {
    [[maybe_unused]] auto n = ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

void listener::note_exhausted(int err) {
  ++exhausted_since_log_;
  std::int64_t now = ctx_->loop->now_ms();
  if (last_exhausted_log_ms_ >= 0 && now - last_exhausted_log_ms_ < exhausted_log_interval_ms) return;
  log::warn(
      "core {}: accept: {} ({} time(s) since the last report); refusing new connections until "
      "descriptors are free",
      ctx_->loop->index(), std::strerror(err), exhausted_since_log_);
  last_exhausted_log_ms_ = now;
  exhausted_since_log_ = 0;
}

bool listener::shed_one(int err) {
  if (spare_fd_ < 0) spare_fd_ = open_spare();
  if (spare_fd_ < 0) return false;
  ::close(spare_fd_);
  spare_fd_ = -1;
  // Logged while the spare's number is free: whatever the logging needs (or a sanitizer's runtime,
  // which opens files to describe a report) finds a descriptor.
  note_exhausted(err);
  int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) refuse(fd, busy_response);
  // Another thread may take the freed number first: then the next EMFILE waits for the retry timer.
  spare_fd_ = open_spare();
  return fd >= 0;
}

void listener::retry_later() {
  if (retry_pending_ || fd_ < 0) return;
  retry_pending_ = true;
  retry_timer_ = ctx_->loop->add_timer(accept_retry_delay, [this] {
    retry_pending_ = false;
    on_io(EPOLLIN);
  });
}

void listener::on_io(std::uint32_t) {
  while (fd_ >= 0) {
    sockaddr_in peer{};
    socklen_t peer_len = sizeof peer;
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        if (shed_one(err)) continue;
        note_exhausted(err);
        retry_later();
        return;
      }
      log::warn("core {}: accept failed: {}", ctx_->loop->index(), std::strerror(err));
      retry_later();
      return;
    }
    std::uint32_t client = peer.sin_family == AF_INET ? ntohl(peer.sin_addr.s_addr) : 0;
    admission::verdict v = ctx_->limits->try_admit(client);
    if (v == admission::verdict::over_total && ctx_->close_oldest_idle()) v = ctx_->limits->try_admit(client);
    if (v != admission::verdict::admit) {
      refuse(fd, v == admission::verdict::over_client ? per_client_response : busy_response);
      continue;
    }
    io::set_nodelay(fd);
    ctx_->accepted.add();
    connection* c = ctx_->acquire();
    c->client = client;
    c->open(fd);
    ctx_->open.set(ctx_->active.size());
  }
}

}  // namespace weir::http

#include "http/listener.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "http/connection.h"
#include "http/loop_context.h"
#include "io/socket.h"

namespace weir::http {

listener::listener(loop_context& ctx, int fd) : ctx_(&ctx), fd_(fd) {}

listener::~listener() {
  close();
}

bool listener::start() {
  registered_ = ctx_->loop->add_fd(fd_, EPOLLIN, this);
  return registered_;
}

void listener::close() {
  if (fd_ < 0) return;
  if (registered_) ctx_->loop->remove_fd(fd_);
  ::close(fd_);
  fd_ = -1;
}

void listener::on_io(std::uint32_t) {
  while (fd_ >= 0) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        log::warn("core {}: accept failed: {}", ctx_->loop->index(), std::strerror(errno));
      }
      return;
    }
    if (ctx_->active.size() >= ctx_->opts->max_connections_per_core) {
      // Over the per-core limit: a best-effort 503 (the socket buffer of a fresh connection is empty, so
      // this non-blocking send normally succeeds whole), then close.
      static constexpr char busy[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
          "Connection: close\r\n\r\ntoo many connections\r\n";
      ctx_->rejected.add();  // before the send: a client that sees the 503 also sees the count
      [[maybe_unused]] auto n = ::send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL);
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
      continue;
    }
    io::set_nodelay(fd);
    ctx_->accepted.add();
    ctx_->acquire()->open(fd);
    ctx_->open.set(ctx_->active.size());
  }
}

}  // namespace weir::http

#include "io/tcp_stream.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "io/socket.h"

namespace weir::io {

result<std::unique_ptr<tcp_stream>> tcp_stream::connect(event_loop& loop, std::uint16_t port, callbacks cb,
                                                        const std::string& host) {
  auto fd = connect_tcp(host, port, /*non_blocking=*/true);
  if (!fd) return fd.err();
  std::unique_ptr<tcp_stream> s(new tcp_stream(loop, *fd, std::move(cb)));
  if (!loop.add_fd(*fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP, s.get())) {
    return make_error(socket_errc::system, "epoll_ctl failed");
  }
  return s;
}

tcp_stream::tcp_stream(event_loop& loop, int fd, callbacks cb)
    : loop_(&loop), fd_(fd), cb_(std::move(cb)), alive_(std::make_shared<bool>(true)) {}

tcp_stream::~tcp_stream() {
  *alive_ = false;
  close();
}

void tcp_stream::close() {
  if (fd_ < 0) return;
  loop_->remove_fd(fd_);
  ::close(fd_);
  fd_ = -1;
  connected_ = false;
}

std::ptrdiff_t tcp_stream::read(char* buf, std::size_t len) {
  if (fd_ < 0) return failed;
  for (;;) {
    auto n = ::recv(fd_, buf, len, 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? would_block : failed;
  }
}

std::ptrdiff_t tcp_stream::write(std::string_view data) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  return writev(&iov, 1);
}

std::ptrdiff_t tcp_stream::writev(const iovec* iov, int count) {
  if (fd_ < 0) return failed;
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<std::size_t>(count);
  for (;;) {
    auto n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? would_block : failed;
  }
}

void tcp_stream::on_io(std::uint32_t events) {
  auto alive = alive_;  // a callback may destroy *this
  if (!connected_) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
      int err = socket_error(fd_);
      if (err != 0) {
        close();
        if (cb_.on_connected) cb_.on_connected(err);
        return;
      }
      connected_ = true;
      if (cb_.on_connected) cb_.on_connected(0);
      if (!*alive || fd_ < 0) return;
    } else {
      return;
    }
  }
  if ((events & EPOLLIN) && cb_.on_readable) {
    cb_.on_readable();
    if (!*alive || fd_ < 0) return;
  }
  if ((events & EPOLLOUT) && cb_.on_writable) {
    cb_.on_writable();
    if (!*alive || fd_ < 0) return;
  }
  if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && cb_.on_hangup) cb_.on_hangup();
}

}  // namespace weir::io

#include "storage/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "storage/env.h"

namespace weir::storage {

result<dir_lock> dir_lock::acquire(const std::string& dir) {
  std::string path = join_path(dir, "LOCK");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(errno, "open " + path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err != EWOULDBLOCK) {
      ::close(fd);
      return errno_error(err, "lock " + path);
    }
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return make_error(errc::busy, "data directory " + dir + " is in use by another process (pid " +
                                      (holder.empty() ? std::string("unknown") : holder) + ", lock " + path +
                                      ")");
  }
  // Ours now: record our PID for the next process that asks. Not synced: only a hint for messages.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    int err = errno;
    ::close(fd);
    return errno_error(err, "write " + path);
  }
  return dir_lock(fd, std::move(path));
}

dir_lock& dir_lock::operator=(dir_lock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

dir_lock::~dir_lock() {
  // Closing the descriptor releases the flock. The file stays: removing it would let a third process
  // lock a new inode while a second still waits on the old one.
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace weir::storage

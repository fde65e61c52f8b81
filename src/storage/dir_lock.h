// dir_lock: the exclusive claim of one process on a data directory. Two processes writing the same logs
// would each acknowledge appends the other overwrites (half of the streams gone after a restart), so a
// second `weir serve` on a directory must refuse to start.
//
// An flock(2) on `<dir>/LOCK`, held as long as the object lives. The kernel drops it when the process
// dies, so a crash leaves no stale lock to clean up by hand. The file holds the holder's PID (text) so
// that the refusal can name it. Any thread; not copyable.
#pragma once

#include <string>

#include "base/result.h"

namespace weir::storage {

class dir_lock {
 public:
  // Takes the lock, creating `<dir>/LOCK` if needed (the directory must exist). Fails with
  // errc::busy naming the directory and the PID that holds it.
  static result<dir_lock> acquire(const std::string& dir);

  dir_lock(dir_lock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  dir_lock& operator=(dir_lock&& o) noexcept;
  dir_lock(const dir_lock&) = delete;
  dir_lock& operator=(const dir_lock&) = delete;
  ~dir_lock();

  const std::string& path() const { return path_; }

 private:
  dir_lock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace weir::storage

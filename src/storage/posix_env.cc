// env over POSIX file descriptors. Runs on whichever thread calls it; blocking by design: only the log's
// sync thread (and start-up recovery) call it, never an event loop.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "storage/env.h"

namespace weir::storage {

error errno_error(int err, const std::string& what) {
  errc code = (err == ENOSPC || err == EDQUOT) ? errc::no_space
              : err == ENOENT                  ? errc::not_found
              : err == EEXIST                  ? errc::already_exists
                                               : errc::io_error;
  return make_error(code, fmt::format("{}: {}", what, std::strerror(err)));
}

namespace {

class posix_writable_file final : public writable_file {
 public:
  posix_writable_file(std::string path, int fd, std::uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~posix_writable_file() override { ::close(fd_); }

  status append(std::span<const std::byte> data) override {
    // pwrite at our own idea of the end (not O_APPEND), so that after truncate() we write where we mean to.
    std::size_t done = 0;
    int spins = 0;
    while (done < data.size()) {
      ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(size_ + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        size_ += done;
        return errno_error(errno, "write " + path_);
      }
      if (n == 0 && ++spins > 3) {
        size_ += done;
        return errno_error(ENOSPC, "write " + path_);
      }
      done += static_cast<std::size_t>(n);
    }
    size_ += done;
    return {};
  }

  status sync() override {
    while (::fdatasync(fd_) != 0) {
      if (errno != EINTR) return errno_error(errno, "fdatasync " + path_);
    }
    return {};
  }

  status truncate(std::uint64_t size) override {
    while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      if (errno != EINTR) return errno_error(errno, "ftruncate " + path_);
    }
    size_ = size;
    return {};
  }

  std::uint64_t size() const override { return size_; }

  status preallocate(std::uint64_t end) override {
    if (end <= size_) return {};
    // KEEP_SIZE: the file's size stays what was written, so recovery never sees the reserved blocks
    // (they read as zeros only if a crash persisted a size the data never reached: a torn tail).
    while (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(size_),
                       static_cast<off_t>(end - size_)) != 0) {
      if (errno != EINTR) return errno_error(errno, "fallocate " + path_);
    }
    return {};
  }

 private:
  std::string path_;
  int fd_;
  std::uint64_t size_;
};

class posix_random_access_file final : public random_access_file {
 public:
  posix_random_access_file(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~posix_random_access_file() override { ::close(fd_); }

  result<std::size_t> read(std::uint64_t offset, std::span<std::byte> out) const override {
    std::size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_error(errno, "read " + path_);
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

  result<std::uint64_t> size() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return errno_error(errno, "fstat " + path_);
    return static_cast<std::uint64_t>(st.st_size);
  }

 private:
  std::string path_;
  int fd_;
};

class posix_env final : public env {
 public:
  result<std::unique_ptr<writable_file>> open_writable(const std::string& path, open_mode mode) override {
    int flags = O_WRONLY | O_CLOEXEC | (mode == open_mode::create_new ? (O_CREAT | O_EXCL) : 0);
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return errno_error(errno, "open " + path);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return errno_error(err, "fstat " + path);
    }
    const auto size = mode == open_mode::overwrite ? 0 : static_cast<std::uint64_t>(st.st_size);
    return std::unique_ptr<writable_file>(std::make_unique<posix_writable_file>(path, fd, size));
  }

  result<std::unique_ptr<random_access_file>> open_readable(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno_error(errno, "open " + path);
    return std::unique_ptr<random_access_file>(std::make_unique<posix_random_access_file>(path, fd));
  }

  result<std::vector<std::string>> list_dir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return errno_error(errno, "opendir " + dir);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(d);
    return names;
  }

  status create_dirs(const std::string& dir) override {
    if (dir.empty()) return {};
    std::size_t pos = 0;
    while (pos != std::string::npos) {
      pos = dir.find('/', pos + 1);
      std::string prefix = dir.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return errno_error(errno, "mkdir " + prefix);
    }
    return {};
  }

  status remove_file(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return errno_error(errno, "unlink " + path);
    return {};
  }

  status rename_file(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return errno_error(errno, "rename " + from);
    return {};
  }

  status sync_dir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno_error(errno, "open dir " + dir);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return errno_error(err, "fsync dir " + dir);
    return {};
  }

  bool file_exists(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }
};

}  // namespace

env& default_posix_env() {
  static posix_env e;
  return e;
}

std::unique_ptr<env> make_posix_env() {
  return std::make_unique<posix_env>();
}

}  // namespace weir::storage

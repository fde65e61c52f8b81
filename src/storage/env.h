// env: every OS access of the storage module goes through this interface (LevelDB's Env), so tests can
// swap in mem_env, which loses unsynced bytes on a simulated crash and injects ENOSPC / EIO.
//
// Implementations are thread-safe: the log's sync thread and the caller's thread may use one env at once.
// A single file object is used by one thread at a time, except that writable_file::sync() may run on a
// second thread while the first appends (the interval mode's background fdatasync).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "storage/types.h"

namespace weir::storage {

// An append-only file that can also be cut back (to undo a failed batch or a torn tail). size() is where
// the next append goes: the file's length, except for a file opened with open_mode::overwrite, whose
// bytes past size() (a prepared segment's zeros) stay on disk until truncate().
class writable_file {
 public:
  virtual ~writable_file() = default;
  // Writes at size(). On failure some prefix of `data` may have been written: size() says how much.
  virtual status append(std::span<const std::byte> data) = 0;
  // fdatasync: on success every byte appended so far survives a crash.
  virtual status sync() = 0;
  // Cuts the file to `size` bytes (<= size(); and drops whatever lies past it); not durable until sync().
  virtual status truncate(std::uint64_t size) = 0;
  virtual std::uint64_t size() const = 0;
  // Reserves the disk blocks for bytes up to `end` without changing size() (fallocate with
  // FALLOC_FL_KEEP_SIZE), so that appends below `end` neither allocate blocks nor wait while a concurrent
  // sync() allocates the blocks of the bytes written before them (ext4 holds the inode's block-map lock
  // for that: measured 5-20 ms stalls of a write during the interval mode's fdatasync). A hint: on
  // failure (no support, no space) nothing changed and appends work as before. Default: does nothing.
  virtual status preallocate(std::uint64_t end) {
    (void)end;
    return {};
  }
};

// Positional reads (pread) of a file that may still be growing.
class random_access_file {
 public:
  virtual ~random_access_file() = default;
  // Reads up to out.size() bytes at `offset`; returns how many were read (short only at end of file).
  virtual result<std::size_t> read(std::uint64_t offset, std::span<std::byte> out) const = 0;
  virtual result<std::uint64_t> size() const = 0;
};

enum class open_mode {
  create_new,     // fails with already_exists if the file exists
  open_existing,  // appends after the current end; fails with not_found if missing
  overwrite,      // writes from byte 0 over what the file holds (size() starts at 0, the length stays)
};

class env {
 public:
  virtual ~env() = default;
  virtual result<std::unique_ptr<writable_file>> open_writable(const std::string& path, open_mode mode) = 0;
  virtual result<std::unique_ptr<random_access_file>> open_readable(const std::string& path) = 0;
  // Names (not paths) of the entries in `dir`, in no particular order.
  virtual result<std::vector<std::string>> list_dir(const std::string& dir) = 0;
  // Creates `dir` and its parents if missing.
  virtual status create_dirs(const std::string& dir) = 0;
  virtual status remove_file(const std::string& path) = 0;
  // Atomic replace of `to` by `from`; durable after sync_dir() of the parent.
  virtual status rename_file(const std::string& from, const std::string& to) = 0;
  // fsync of the directory: makes creations, renames and removals in it durable.
  virtual status sync_dir(const std::string& dir) = 0;
  virtual bool file_exists(const std::string& path) = 0;
};

// The real file system (POSIX calls).
env& default_posix_env();
std::unique_ptr<env> make_posix_env();

// Maps an errno value to a storage error with `what` (e.g. "write /data/0001.log") as reason.
error errno_error(int err, const std::string& what);

// The whole content of `path`, read through `e` (checkpoints and segments at recovery; blocking).
result<std::vector<std::byte>> read_whole_file(env& e, const std::string& path);

// Replaces `path` by a file holding `data`: a temp file (`path` + ".tmp"), fdatasync, rename, fsync of the
// directory. After a crash `path` is the old file (or absent) or the new one, whole; a temp file left by a
// crash is removed by the next call. Blocking; for small files written rarely (a node's identity, its
// membership). The error's reason names the file and the step that failed.
status replace_file(env& e, const std::string& path, std::span<const std::byte> data);

inline std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace weir::storage

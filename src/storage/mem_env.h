// mem_env: an in-memory env for tests. It keeps, per file, the bytes a crash would preserve (the state at
// the last sync) apart from the bytes written since, so crash() can drop what was never synced, and it
// injects the failures the log must survive: ENOSPC (a capacity limit), EIO on write or sync.
//
// Model of a crash:
//   * a file's content reverts to its content at its last sync(); with torn writes enabled, a random
//     prefix of the unsynced changes is kept instead (a partial record at the tail);
//   * a file created since the last sync_dir() of its directory disappears;
//   * removals and renames are durable at once (a simplification: the log never depends on them being
//     undone, and recovery tolerates both outcomes).
// Every file object opened before crash() becomes detached: writes through it change nothing visible.
// After crash() the env is halted, as the crashed process would be: every call fails with EIO until
// restart(), so a log_writer still running cannot touch the "rebooted" files.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>

#include "storage/env.h"

namespace weir::storage {

class mem_env final : public env {
 public:
  struct file_state;  // shared with the file objects

  mem_env();
  ~mem_env() override;

  result<std::unique_ptr<writable_file>> open_writable(const std::string& path, open_mode mode) override;
  result<std::unique_ptr<random_access_file>> open_readable(const std::string& path) override;
  result<std::vector<std::string>> list_dir(const std::string& dir) override;
  status create_dirs(const std::string& dir) override;
  status remove_file(const std::string& path) override;
  status rename_file(const std::string& from, const std::string& to) override;
  status sync_dir(const std::string& dir) override;
  bool file_exists(const std::string& path) override;

  // Simulated power loss. `torn_seed`: if set, keep a random prefix of each file's unsynced bytes.
  void crash(std::optional<std::uint64_t> torn_seed = std::nullopt);
  // Ends the halt that crash() began (the machine is back; recovery may run).
  void restart();

  // Fault injection.
  // Total bytes all files may hold; an append that does not fit writes what fits, then fails with ENOSPC.
  void set_capacity(std::optional<std::uint64_t> bytes);
  // The next `n` sync() calls fail with EIO (the data stays unsynced).
  void fail_next_syncs(int n);
  // While set, every append fails with EIO before writing anything.
  void set_write_error(bool on);

  // Observation, for tests.
  std::uint64_t sync_count() const;
  std::uint64_t append_count() const;
  std::uint64_t used_bytes() const;
  // Whole current content of a file (synced or not); nullopt if missing.
  std::optional<std::vector<std::byte>> contents(const std::string& path) const;
  // Replaces a file's content, synced (for corruption tests).
  void set_contents(const std::string& path, std::vector<std::byte> bytes);

  // Used by the file objects (lock held inside).
  // Writes `data` at `at` (nullopt: at the end), over existing bytes and past them; `written`: how much.
  status file_write(file_state& f, std::optional<std::uint64_t> at, std::span<const std::byte> data,
                    std::uint64_t* written = nullptr);
  status file_sync(file_state& f);
  status file_truncate(file_state& f, std::uint64_t size);
  std::uint64_t file_size(const file_state& f) const;
  result<std::size_t> file_read(const file_state& f, std::uint64_t offset, std::span<std::byte> out) const;

 private:
  std::uint64_t used_locked() const;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<file_state>> files_;
  std::set<std::string> dirs_;
  std::optional<std::uint64_t> capacity_;
  int failing_syncs_ = 0;
  bool write_error_ = false;
  bool halted_ = false;
  std::uint64_t syncs_ = 0;
  std::uint64_t appends_ = 0;
};

}  // namespace weir::storage

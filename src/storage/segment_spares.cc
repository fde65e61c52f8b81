#include "storage/segment_spares.h"

#include <algorithm>
#include <vector>

#include "base/log.h"

namespace weir::storage {

namespace {
// Zeros are written in pieces of this size and synced every `sync_every` bytes, so that the spare never
// holds much dirty page cache, and a log's fdatasync (a flush of the device's cache) never queues behind
// megabytes of zeros.
constexpr std::size_t piece = 256 << 10;
constexpr std::uint64_t sync_every = 1ull << 20;
}  // namespace

std::uint64_t nonzero_end(std::span<const std::byte> bytes) {
  std::uint64_t end = bytes.size();
  while (end > 0 && bytes[end - 1] == std::byte{0}) --end;
  return end;
}

std::uint64_t written_end(std::span<const std::byte> bytes, std::uint64_t from) {
  constexpr std::uint64_t page = 4096;
  const std::uint64_t written = std::max(from, nonzero_end(bytes));
  const bool unused_room =
      bytes.size() - written >= page || (bytes.size() > written && bytes.size() % page == 0);
  return unused_room ? written : bytes.size();
}

segment_spares::segment_spares(env& e, std::string dir, std::uint64_t first_bytes, std::uint64_t max_bytes,
                               std::uint64_t bytes_per_second, std::string name)
    : env_(e),
      dir_(std::move(dir)),
      path_(join_path(dir_, name)),
      max_bytes_(max_bytes),
      bytes_per_second_(bytes_per_second),
      next_bytes_(std::min(first_bytes, max_bytes)) {
  thread_ = std::thread([this] { run(); });
}

segment_spares::~segment_spares() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  ready_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void segment_spares::request() {
  {
    std::lock_guard lock(mu_);
    if (ready_ || wanted_) return;
    wanted_ = true;
  }
  cv_.notify_one();
}

std::optional<segment_spares::spare> segment_spares::take() {
  std::lock_guard lock(mu_);
  if (!ready_) return std::nullopt;
  ready_ = false;
  return spare{path_, ready_bytes_};
}

bool segment_spares::ready() const {
  std::lock_guard lock(mu_);
  return ready_;
}

bool segment_spares::wait_ready(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  ready_cv_.wait_for(lock, limit, [&] { return ready_ || stop_ || (!wanted_ && last_failed_); });
  return ready_;
}

std::uint64_t segment_spares::prepared() const {
  std::lock_guard lock(mu_);
  return prepared_;
}

std::uint64_t segment_spares::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

void segment_spares::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || wanted_; });
    if (stop_) return;
    const std::uint64_t bytes = next_bytes_;
    lock.unlock();
    status st = prepare(bytes);
    lock.lock();
    if (stop_) return;
    wanted_ = false;
    last_failed_ = !st;
    if (st) {
      ready_ = true;
      ready_bytes_ = bytes;
      ++prepared_;
      next_bytes_ = std::min(bytes * 2, max_bytes_);
    } else {
      ++failed_;
      // Logged once per failure; the writer keeps growing its segment, and asks again at its next roll.
      log::warn("storage: {}: cannot prepare a segment ({}); appends grow the segment meanwhile", dir_,
                st.err().reason);
      (void)env_.remove_file(path_);
    }
    ready_cv_.notify_all();
  }
}

status segment_spares::prepare(std::uint64_t bytes) {
  if (env_.file_exists(path_)) {
    if (auto st = env_.remove_file(path_); !st) return st;
  }
  auto file = env_.open_writable(path_, open_mode::create_new);
  if (!file) return file.err();
  const std::vector<std::byte> zeros(piece);
  std::uint64_t unsynced = 0;
  const auto began = std::chrono::steady_clock::now();
  while ((*file)->size() < bytes) {
    {
      // Paced: the zeros may take at most bytes_per_second of the disk (they cost as much to write as
      // the data that later goes over them, and a busy writer gains less from them than it loses).
      std::unique_lock lock(mu_);
      if (bytes_per_second_ > 0) {
        const auto due = began + std::chrono::microseconds((*file)->size() * 1'000'000 / bytes_per_second_);
        cv_.wait_until(lock, due, [&] { return stop_; });
      }
      if (stop_) return make_error(errc::closed, "log is closing");
    }
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(piece, bytes - (*file)->size()));
    if (auto st = (*file)->append(std::span(zeros).first(n)); !st) return st;
    unsynced += n;
    if (unsynced >= sync_every) {
      if (auto st = (*file)->sync(); !st) return st;
      unsynced = 0;
    }
  }
  if (auto st = (*file)->sync(); !st) return st;
  // Not synced into the directory here: the writer's roll renames it and syncs the directory then.
  return {};
}

}  // namespace weir::storage

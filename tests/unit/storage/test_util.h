// Helpers shared by the storage tests: a completion queue standing in for the event loop, a recovery
// that collects records, an env whose fdatasync the test can hold open, and an env that counts the bytes
// read per file and can fail (or crash mem_env) on a chosen removal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "storage/env.h"
#include "storage/log_recovery.h"
#include "storage/log_writer.h"
#include "storage/mem_env.h"

namespace weir::storage::testing {

inline std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return {b.begin(), b.end()};
}

inline std::string string_of(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// The executor the writer posts completions to; the test thread runs them (as an event loop would).
class completion_queue {
 public:
  executor exec() {
    return [this](std::function<void()> fn) {
      {
        std::lock_guard lock(mu_);
        tasks_.push_back(std::move(fn));
        ++posted_;
      }
      cv_.notify_all();
    };
  }
  // Runs queued completions until `done()` holds; false if it did not within `limit` (a hung writer).
  bool run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        if (!cv_.wait_until(lock, deadline, [&] { return !tasks_.empty(); })) return done();
        fn = std::move(tasks_.front());
        tasks_.pop_front();
      }
      fn();
    }
    return true;
  }
  // Runs whatever is queued right now, without waiting.
  void run_ready() {
    for (;;) {
      std::function<void()> fn;
      {
        std::lock_guard lock(mu_);
        if (tasks_.empty()) return;
        fn = std::move(tasks_.front());
        tasks_.pop_front();
      }
      fn();
    }
  }
  std::size_t posted() const {
    std::lock_guard lock(mu_);
    return posted_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::size_t posted_ = 0;
};

struct replayed {
  lsn seq;
  std::uint8_t type;
  std::string payload;
  log_position pos;
};

inline result<recovered_log> recover_into(env& e, const std::string& dir, std::vector<replayed>& out) {
  return recover_log(e, dir, [&](const record_view& v) -> status {
    out.push_back(replayed{v.seq, v.type, string_of(v.payload), v.pos});
    return {};
  });
}

// An env over mem_env whose file sync() calls block while the gate is closed, so a test can observe the
// writer with a fdatasync "in flight".
class gated_env final : public env {
 public:
  explicit gated_env(mem_env& inner) : inner_(inner) {}

  void close_gate() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // Lets exactly one blocked-or-future sync through while the gate stays closed.
  void release_one() {
    {
      std::lock_guard lock(mu_);
      ++tickets_;
    }
    cv_.notify_all();
  }
  // Waits until `n` syncs are blocked at the gate (bounded).
  bool wait_blocked(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return blocked_ >= n; });
  }
  int blocked() const {
    std::lock_guard lock(mu_);
    return blocked_;
  }

  result<std::unique_ptr<writable_file>> open_writable(const std::string& path, open_mode mode) override {
    auto f = inner_.open_writable(path, mode);
    if (!f) return f.err();
    return std::unique_ptr<writable_file>(std::make_unique<gated_file>(*this, std::move(*f)));
  }
  result<std::unique_ptr<random_access_file>> open_readable(const std::string& path) override {
    return inner_.open_readable(path);
  }
  result<std::vector<std::string>> list_dir(const std::string& dir) override { return inner_.list_dir(dir); }
  status create_dirs(const std::string& dir) override { return inner_.create_dirs(dir); }
  status remove_file(const std::string& path) override { return inner_.remove_file(path); }
  status rename_file(const std::string& from, const std::string& to) override {
    return inner_.rename_file(from, to);
  }
  status sync_dir(const std::string& dir) override { return inner_.sync_dir(dir); }
  bool file_exists(const std::string& path) override { return inner_.file_exists(path); }

 private:
  class gated_file final : public writable_file {
   public:
    gated_file(gated_env& g, std::unique_ptr<writable_file> f) : g_(g), f_(std::move(f)) {}
    status append(std::span<const std::byte> data) override { return f_->append(data); }
    status sync() override {
      g_.pass();
      return f_->sync();
    }
    status truncate(std::uint64_t size) override { return f_->truncate(size); }
    std::uint64_t size() const override { return f_->size(); }

   private:
    gated_env& g_;
    std::unique_ptr<writable_file> f_;
  };

  void pass() {
    std::unique_lock lock(mu_);
    ++blocked_;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return open_ || tickets_ > 0; });
    if (!open_ && tickets_ > 0) --tickets_;
    --blocked_;
  }

  mem_env& inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int tickets_ = 0;
  int blocked_ = 0;
};

// An env over mem_env that counts what is read from each file (by path) and lets a test act on removals:
// `on_remove` runs before each remove_file and, if it returns an error, that is the removal's result.
class counting_env final : public env {
 public:
  explicit counting_env(mem_env& inner) : inner_(inner) {}

  std::function<status(const std::string& path)> on_remove;

  std::uint64_t bytes_read(const std::string& path) const {
    std::lock_guard lock(mu_);
    auto it = read_.find(path);
    return it == read_.end() ? 0 : it->second;
  }
  std::uint64_t read_calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  void reset_counts() {
    std::lock_guard lock(mu_);
    read_.clear();
    calls_ = 0;
  }

  result<std::unique_ptr<writable_file>> open_writable(const std::string& path, open_mode mode) override {
    return inner_.open_writable(path, mode);
  }
  result<std::unique_ptr<random_access_file>> open_readable(const std::string& path) override {
    auto f = inner_.open_readable(path);
    if (!f) return f.err();
    return std::unique_ptr<random_access_file>(std::make_unique<counted_file>(*this, path, std::move(*f)));
  }
  result<std::vector<std::string>> list_dir(const std::string& dir) override { return inner_.list_dir(dir); }
  status create_dirs(const std::string& dir) override { return inner_.create_dirs(dir); }
  status remove_file(const std::string& path) override {
    if (on_remove) {
      if (auto st = on_remove(path); !st) return st;
    }
    return inner_.remove_file(path);
  }
  status rename_file(const std::string& from, const std::string& to) override {
    return inner_.rename_file(from, to);
  }
  status sync_dir(const std::string& dir) override { return inner_.sync_dir(dir); }
  bool file_exists(const std::string& path) override { return inner_.file_exists(path); }

 private:
  class counted_file final : public random_access_file {
   public:
    counted_file(counting_env& c, std::string path, std::unique_ptr<random_access_file> f)
        : c_(c), path_(std::move(path)), f_(std::move(f)) {}
    result<std::size_t> read(std::uint64_t offset, std::span<std::byte> out) const override {
      auto n = f_->read(offset, out);
      if (n) {
        std::lock_guard lock(c_.mu_);
        c_.read_[path_] += *n;
        ++c_.calls_;
      }
      return n;
    }
    result<std::uint64_t> size() const override { return f_->size(); }

   private:
    counting_env& c_;
    std::string path_;
    std::unique_ptr<random_access_file> f_;
  };

  mem_env& inner_;
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t> read_;
  std::uint64_t calls_ = 0;
};

}  // namespace weir::storage::testing

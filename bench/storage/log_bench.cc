// weir-log-bench: appends/s and fdatasyncs/s of one log_writer on the real disk with N concurrent
// producers, each of which appends one record, waits for its completion, and appends the next (the way
// N connections on one core wait for their 200s). Completions come back through an executor that a
// single "event loop" thread drains, as in the server. The peer measured in the same run is the disk
// itself: a loop of write + fdatasync of one record, the ceiling without group commit.
//
//   weir-log-bench --dir /var/tmp/weir-bench --producers 64 --seconds 5 --payload 256
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "storage/log_recovery.h"
#include "storage/log_writer.h"

namespace {

using namespace weir::storage;
using clock_type = std::chrono::steady_clock;

// The stand-in event loop: a task queue drained by one thread.
class loop {
 public:
  executor exec() {
    return [this](std::function<void()> fn) {
      {
        std::lock_guard lock(mu_);
        tasks_.push_back(std::move(fn));
      }
      cv_.notify_one();
    };
  }
  // Runs tasks until `until`.
  void run(clock_type::time_point until) {
    while (clock_type::now() < until) {
      std::deque<std::function<void()>> batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait_until(lock, until, [&] { return !tasks_.empty(); });
        batch.swap(tasks_);
      }
      for (auto& fn : batch) fn();
    }
  }
  void drain() {
    std::deque<std::function<void()>> batch;
    {
      std::lock_guard lock(mu_);
      batch.swap(tasks_);
    }
    for (auto& fn : batch) fn();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
};

struct run_result {
  double appends_per_s = 0;
  double syncs_per_s = 0;
  double records_per_batch = 0;
  double p50_us = 0, p99_us = 0;
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::size_t k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

run_result run_log(const std::string& dir, int producers, double seconds, std::size_t payload_size,
                   const sync_policy& policy, std::chrono::microseconds linger) {
  std::filesystem::remove_all(dir);
  env& e = default_posix_env();
  auto rec = recover_log(e, dir, [](const record_view&) -> weir::status { return {}; });
  if (!rec) throw std::runtime_error(rec.err().reason);
  loop l;
  log_options opts;
  opts.sync = policy;
  opts.segment_bytes = 64ull << 20;
  opts.linger = linger;
  auto w = log_writer::open(e, dir, opts, *rec, l.exec());
  if (!w) throw std::runtime_error(w.err().reason);

  std::vector<std::byte> payload(payload_size, std::byte{'x'});
  std::uint64_t done = 0;
  bool stopping = false;
  std::vector<double> latencies_us;
  latencies_us.reserve(1 << 20);
  std::function<void(int)> issue = [&](int producer) {
    auto start = clock_type::now();
    (*w)->append(1, payload, [&, producer, start](weir::result<append_ack> r) {
      if (!r) throw std::runtime_error(r.err().reason);
      ++done;
      latencies_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
      if (!stopping) issue(producer);
    });
  };
  const auto before = (*w)->stats();
  const auto t0 = clock_type::now();
  for (int p = 0; p < producers; ++p) issue(p);
  l.run(t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds)));
  const double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  const std::uint64_t counted = done;
  const auto after = (*w)->stats();
  stopping = true;
  w->reset();  // completes what is in flight
  l.drain();

  run_result r;
  r.appends_per_s = static_cast<double>(counted) / elapsed;
  r.syncs_per_s = static_cast<double>(after.syncs - before.syncs) / elapsed;
  r.records_per_batch = static_cast<double>(after.records - before.records) /
                        static_cast<double>(std::max<std::uint64_t>(1, after.batches - before.batches));
  r.p50_us = percentile(latencies_us, 0.50);
  r.p99_us = percentile(latencies_us, 0.99);
  std::filesystem::remove_all(dir);
  return r;
}

// The peer: one record per write + fdatasync, no batching.
double run_raw_fdatasync(const std::string& dir, double seconds, std::size_t record_size) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/raw";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path);
  std::vector<char> rec(record_size, 'x');
  std::uint64_t n = 0;
  const auto t0 = clock_type::now();
  const auto until =
      t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  while (clock_type::now() < until) {
    if (::write(fd, rec.data(), rec.size()) != static_cast<ssize_t>(rec.size()))
      throw std::runtime_error("write");
    if (::fdatasync(fd) != 0) throw std::runtime_error("fdatasync");
    ++n;
  }
  const double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  ::close(fd);
  std::filesystem::remove_all(dir);
  return static_cast<double>(n) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"weir-log-bench: group-commit ceiling of the storage log"};
  std::string dir = "/var/tmp/weir-log-bench";
  std::vector<int> producers{1, 64};
  double seconds = 5;
  std::size_t payload = 256;
  std::string mode = "always";
  long linger_us = 1000;
  app.add_option("--dir", dir, "scratch directory on the disk to measure (removed afterwards)");
  app.add_option("--producers", producers, "concurrent producers (one run per value)");
  app.add_option("--seconds", seconds, "duration of each run")->check(CLI::Range(0.1, 600.0));
  app.add_option("--payload", payload, "payload bytes per record")->check(CLI::Range(0, 1 << 20));
  app.add_option("--fsync", mode, "always | interval:MS | never");
  app.add_option("--linger-us", linger_us, "log_options::linger in microseconds (0: off)");
  CLI11_PARSE(app, argc, argv);
  auto policy = parse_sync_policy(mode);
  if (!policy) {
    std::fprintf(stderr, "%s\n", policy.err().reason.c_str());
    return 2;
  }
  try {
    double raw = run_raw_fdatasync(dir, seconds, payload + 24);
    fmt::print("peer: write+fdatasync of one {}-byte record: {:.0f} fdatasyncs/s\n", payload + 24, raw);
    fmt::print("{:>9} {:>12} {:>14} {:>16} {:>10} {:>10}\n", "producers", "appends/s", "fdatasyncs/s",
               "records/batch", "p50 us", "p99 us");
    for (int p : producers) {
      auto r = run_log(dir, p, seconds, payload, *policy, std::chrono::microseconds(linger_us));
      fmt::print("{:>9} {:>12.0f} {:>14.0f} {:>16.1f} {:>10.0f} {:>10.0f}\n", p, r.appends_per_s,
                 r.syncs_per_s, r.records_per_batch, r.p50_us, r.p99_us);
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "weir-log-bench: %s\n", ex.what());
    return 1;
  }
  return 0;
}

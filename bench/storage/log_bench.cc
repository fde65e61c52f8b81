// weir-log-bench: appends/s and fdatasyncs/s of one log_writer on the real disk with N concurrent
// producers, each of which appends one record, waits for its completion, and appends the next (the way
// N connections on one core wait for their 200s). Completions come back through an executor that a
// single "event loop" thread drains, as in the server. The peer measured in the same run is the disk
// itself: a loop of write + fdatasync of one record, the ceiling without group commit.
// With --loops N the producers are spread over N such loops, and --layout compares a log per loop (as
// weir serve keeps one per core) with one log shared by all loops (a node-wide group commit): how many
// logs should share one device (docs/benchmarks.md, "Redis: how many logs on one device").
//
//   weir-log-bench --dir /var/tmp/weir-bench --producers 64 --seconds 5 --payload 256
//   weir-log-bench --loops 2 --layout both --producers 2,64 --payload 1024
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

// N producers spread round robin over `loops` stand-in event loops (one thread each). Per-core layout
// (`shared` false): each loop has its own log in dir/log-I, its completions posted to that loop, as
// weir serve does with one log per core. Shared layout: one log for all loops (a node-wide group
// commit: one fdatasync covers every loop's appends); its completions are dispatched on the sync
// thread and each producer's next append is posted to its own loop, so the log's linger (which waits
// for its executor's tasks to run) has nothing to wait for there.
run_result run_log(const std::string& dir, int loops, bool shared, int producers, double seconds,
                   std::size_t payload_size, const sync_policy& policy, std::chrono::microseconds linger) {
  std::filesystem::remove_all(dir);
  env& e = default_posix_env();
  std::vector<std::unique_ptr<loop>> ls;
  for (int i = 0; i < loops; ++i) ls.push_back(std::make_unique<loop>());
  log_options opts;
  opts.sync = policy;
  opts.segment_bytes = 64ull << 20;
  opts.linger = linger;
  std::vector<std::unique_ptr<log_writer>> writers;
  for (int i = 0; i < (shared ? 1 : loops); ++i) {
    const std::string d = dir + "/log-" + std::to_string(i);
    auto rec = recover_log(e, d, [](const record_view&) -> weir::status { return {}; });
    if (!rec) throw std::runtime_error(rec.err().reason);
    executor ex =
        shared ? executor([](std::function<void()> fn) { fn(); }) : ls[static_cast<std::size_t>(i)]->exec();
    auto w = log_writer::open(e, d, opts, *rec, std::move(ex));
    if (!w) throw std::runtime_error(w.err().reason);
    writers.push_back(std::move(*w));
  }

  std::vector<std::byte> payload(payload_size, std::byte{'x'});
  struct per_loop {
    std::uint64_t done = 0;
    std::vector<double> latencies_us;
  };
  std::vector<per_loop> counts(static_cast<std::size_t>(loops));
  for (auto& c : counts) c.latencies_us.reserve(1 << 19);
  std::atomic<bool> stopping{false};
  std::function<void(int)> issue = [&](int producer) {
    const auto li = static_cast<std::size_t>(producer % loops);
    log_writer& w = *writers[shared ? 0 : li];
    auto start = clock_type::now();
    w.append(1, payload, [&, producer, li, start](weir::result<append_ack> r) {
      if (!r) throw std::runtime_error(r.err().reason);
      auto account = [&, producer, li, start] {
        ++counts[li].done;
        counts[li].latencies_us.push_back(
            std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
        if (!stopping.load()) issue(producer);
      };
      if (shared) {
        ls[li]->exec()(account);
      } else {
        account();
      }
    });
  };
  std::vector<log_stats> before;
  for (auto& w : writers) before.push_back(w->stats());
  const auto t0 = clock_type::now();
  const auto until =
      t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  for (int p = 0; p < producers; ++p)
    ls[static_cast<std::size_t>(p % loops)]->exec()([&issue, p] { issue(p); });
  std::vector<std::thread> threads;
  for (auto& l : ls) threads.emplace_back([&l, until] { l->run(until); });
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  std::uint64_t counted = 0;
  std::vector<double> latencies_us;
  for (auto& c : counts) {
    counted += c.done;
    latencies_us.insert(latencies_us.end(), c.latencies_us.begin(), c.latencies_us.end());
  }
  std::uint64_t syncs = 0, records = 0, batches = 0;
  for (std::size_t i = 0; i < writers.size(); ++i) {
    const auto after = writers[i]->stats();
    syncs += after.syncs - before[i].syncs;
    records += after.records - before[i].records;
    batches += after.batches - before[i].batches;
  }
  stopping = true;
  for (auto& w : writers) w.reset();  // completes what is in flight
  for (auto& l : ls) l->drain();

  run_result r;
  r.appends_per_s = static_cast<double>(counted) / elapsed;
  r.syncs_per_s = static_cast<double>(syncs) / elapsed;
  r.records_per_batch =
      static_cast<double>(records) / static_cast<double>(std::max<std::uint64_t>(1, batches));
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
  int loops = 1;
  std::string layout = "per-core";
  app.add_option("--dir", dir, "scratch directory on the disk to measure (removed afterwards)");
  app.add_option("--producers", producers, "concurrent producers (one run per value)");
  app.add_option("--seconds", seconds, "duration of each run")->check(CLI::Range(0.1, 600.0));
  app.add_option("--payload", payload, "payload bytes per record")->check(CLI::Range(0, 1 << 20));
  app.add_option("--fsync", mode, "always | interval:MS | never");
  app.add_option("--linger-us", linger_us, "log_options::linger in microseconds (0: off)");
  app.add_option("--loops", loops, "stand-in event loops (threads) the producers are spread over")
      ->check(CLI::Range(1, 64));
  app.add_option("--layout", layout, "per-core (a log per loop) | shared (one log for all loops) | both")
      ->check(CLI::IsMember({"per-core", "shared", "both"}));
  CLI11_PARSE(app, argc, argv);
  auto policy = parse_sync_policy(mode);
  if (!policy) {
    std::fprintf(stderr, "%s\n", policy.err().reason.c_str());
    return 2;
  }
  try {
    double raw = run_raw_fdatasync(dir, seconds, payload + 24);
    fmt::print("peer: write+fdatasync of one {}-byte record: {:.0f} fdatasyncs/s\n", payload + 24, raw);
    fmt::print("{:>9} {:>9} {:>12} {:>14} {:>16} {:>10} {:>10}\n", "layout", "producers", "appends/s",
               "fdatasyncs/s", "records/batch", "p50 us", "p99 us");
    for (int p : producers) {
      for (const char* l : {"per-core", "shared"}) {
        if (layout != "both" && layout != l) continue;
        auto r = run_log(dir, loops, std::string(l) == "shared", p, seconds, payload, *policy,
                         std::chrono::microseconds(linger_us));
        fmt::print("{:>9} {:>9} {:>12.0f} {:>14.0f} {:>16.1f} {:>10.0f} {:>10.0f}\n", l, p, r.appends_per_s,
                   r.syncs_per_s, r.records_per_batch, r.p50_us, r.p99_us);
      }
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "weir-log-bench: %s\n", ex.what());
    return 1;
  }
  return 0;
}

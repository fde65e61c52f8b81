#include "crash/crash_scenario.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "crash/blocking_client.h"
#include "crash/crash_load.h"
#include "crash/crash_model.h"
#include "crash/crash_verifier.h"
#include "crash/server_process.h"

namespace weir::crash_test {

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

std::uint64_t pick_seed() {
  if (const char* env = std::getenv("WEIR_CRASH_SEED"); env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 10);
  }
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32 | rd()) % 1'000'000'000'000ull;
}

std::string weir_binary() {
  if (const char* env = std::getenv("WEIR_BIN"); env != nullptr && *env != '\0') return env;
  return WEIR_BINARY;
}

// `weir serve` flags for the n-th start: WEIR_CRASH_SERVE_ARGS when set; otherwise a data directory of two
// logs (the first start's two threads: forks and wake-ups cross shards) restarted on 2, 1 and 3 threads in
// turn (the logs' shards then share a core, or a core owns none), once the binary has --fsync the durable
// modes in turn, and once it has a hot tier a small memory budget, small segments and frequent checkpoints,
// so that kills land in the middle of evictions, cold reads, checkpoints and segment reclaim.
std::vector<std::string> serve_args(int start, bool has_fsync, bool has_hot_tier) {
  std::vector<std::string> args;
  if (const char* env = std::getenv("WEIR_CRASH_SERVE_ARGS"); env != nullptr) {
    std::istringstream in(env);
    for (std::string a; in >> a;) args.push_back(a);
    return args;
  }
  static const char* const threads[] = {"2", "1", "3"};
  args = {"--threads", threads[start % 3]};
  if (has_fsync) {
    static const char* const modes[] = {"always", "interval:5"};
    args.push_back("--fsync");
    args.push_back(modes[start % 2]);
  }
  if (has_hot_tier) {
    for (const char* a :
         {"--hot-bytes", "131072", "--segment-bytes", "65536", "--checkpoint-bytes", "262144"})
      args.push_back(a);
  }
  return args;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

long long ms_since(clock_type::time_point t) {
  return std::chrono::duration_cast<milliseconds>(clock_type::now() - t).count();
}

}  // namespace

void run_crash_scenario(const scenario_options& o) {
  const std::uint64_t seed = pick_seed();
  std::printf("[crash] seed=%llu (rerun: WEIR_CRASH_SEED=%llu), %d cycles, %d writers\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), o.cycles,
              o.writers);
  std::fflush(stdout);
  std::mt19937_64 rng(seed);

  const std::string binary = weir_binary();
  ASSERT_TRUE(fs::exists(binary)) << "weir binary not found: " << binary;
  const bool has_fsync = serve_supports_flag(binary, "--fsync");
  const bool has_hot_tier = serve_supports_flag(binary, "--hot-bytes");
  std::string tmpl = (fs::temp_directory_path() / "weir-crash-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  server_process srv(binary, dir / "data", serve_args(0, has_fsync, has_hot_tier), dir / "weir.log");
  if (!has_fsync) std::printf("[crash] note: this weir serve has no --fsync flag (not durable yet?)\n");

  int starts = 0;
  std::string why;
  auto start = [&](const std::string& note) {
    srv.set_args(serve_args(starts++, has_fsync, has_hot_tier));
    srv.start(note + ": weir serve " + join(serve_args(starts - 1, has_fsync, has_hot_tier)));
  };
  start("initial start");
  auto t0 = clock_type::now();
  ASSERT_TRUE(srv.wait_ready(milliseconds(30'000), why)) << why << "\n" << srv.log_tail(4000);
  long long last_ready_ms = ms_since(t0);

  crash_model model;
  std::vector<int> shared;
  {
    blocking_client c(srv.port());
    for (int i = 0; i < 2; ++i) {
      stream_model& s = model.add_stream(stream_kind::bytes, -1, 0);
      const http_reply r = c.request("PUT", s.path, {{"Content-Type", content_type_of(stream_kind::bytes)}});
      ASSERT_EQ(r.status, 201) << "creating " << s.path << ": " << r.error;
      s.created = outcome::acked;
      s.create_offset = r.next_offset();
      shared.push_back(s.id);
    }
  }
  std::vector<writer_state> writers(static_cast<std::size_t>(o.writers));
  for (std::size_t i = 0; i < writers.size(); ++i) writers[i].id = static_cast<std::uint32_t>(i);

  bool failed = false;
  for (int cycle = 0; cycle < o.cycles && !failed; ++cycle) {
    problem_log problems;
    // 1. Load, then SIGKILL at a random moment.
    std::atomic<bool> stop{false};
    std::vector<std::unique_ptr<load_writer>> loads;
    std::vector<std::thread> threads;
    for (auto& w : writers) {
      loads.push_back(std::make_unique<load_writer>(model, w, problems, shared, rng(), cycle));
      threads.emplace_back([&, l = loads.back().get()] { l->run(srv.port(), stop, 1'000'000); });
    }
    const auto load_ms =
        std::uniform_int_distribution<long long>(o.min_load.count(), o.max_load.count())(rng);
    std::this_thread::sleep_for(milliseconds(load_ms));
    const bool killed = srv.kill(why);
    stop = true;
    for (auto& t : threads) t.join();
    if (!killed) {
      ADD_FAILURE() << "cycle " << cycle << ": weir serve " << why << " during the load, before the kill\n"
                    << srv.log_tail(4000);
      failed = true;
      break;
    }
    load_counts total;
    for (const auto& l : loads) {
      total.requests += l->counts().requests;
      total.acked_appends += l->counts().acked_appends;
      total.forks += l->counts().forks;
      total.closes += l->counts().closes;
    }

    // 2. On the first cycle and now and then: kill the restart while it recovers.
    std::string recovery_note;
    if (cycle == 0 || rng() % 3 == 0) {
      const auto delay = std::uniform_int_distribution<long long>(0, last_ready_ms)(rng);
      start("cycle " + std::to_string(cycle) + ": restart to be killed during recovery after " +
            std::to_string(delay) + " ms");
      std::this_thread::sleep_for(milliseconds(delay));
      if (!srv.kill(why)) {
        ADD_FAILURE() << "cycle " << cycle << ": weir serve " << why << " while recovering\n"
                      << srv.log_tail(4000);
        failed = true;
        break;
      }
      recovery_note = ", restart killed after " + std::to_string(delay) + " ms";
    }

    // 3. Restart on the same data directory.
    start("cycle " + std::to_string(cycle) + ": restart");
    t0 = clock_type::now();
    if (!srv.wait_ready(milliseconds(120'000), why)) {
      ADD_FAILURE() << "cycle " << cycle << ": restart failed: " << why << "\n" << srv.log_tail(4000);
      failed = true;
      break;
    }
    last_ready_ms = ms_since(t0);

    // 4. Idempotent producers retry what the kill interrupted (and some of what was acknowledged).
    {
      blocking_client c(srv.port());
      for (auto& w : writers) {
        if (!retry_producer(c, model, w, problems, rng)) {
          problems.add("producer retry failed", "writer " + std::to_string(w.id) + ": transport error");
        }
      }
    }

    // 5. Everything ever acknowledged must be there, once, where its ack said.
    crash_verifier v(model, problems, cycle, rng(), o.old_ack_sample);
    v.run(srv.port(), 3);
    const verify_counts& vc = v.counts();
    std::printf(
        "[crash] cycle %d/%d: %llu requests, %llu appends acked, %llu forks, %llu closes; killed after %lld "
        "ms%s; "
        "ready in %lld ms; verified %llu streams, %llu appends found, %llu ack offsets re-read; "
        "unacknowledged: "
        "%llu present, %llu absent\n",
        cycle + 1, o.cycles, static_cast<unsigned long long>(total.requests),
        static_cast<unsigned long long>(total.acked_appends), static_cast<unsigned long long>(total.forks),
        static_cast<unsigned long long>(total.closes), load_ms, recovery_note.c_str(), last_ready_ms,
        static_cast<unsigned long long>(vc.streams), static_cast<unsigned long long>(vc.appends_found),
        static_cast<unsigned long long>(vc.ack_offsets_read),
        static_cast<unsigned long long>(vc.pending_present),
        static_cast<unsigned long long>(vc.pending_absent));
    std::fflush(stdout);
    if (!problems.empty()) {
      ADD_FAILURE() << "cycle " << cycle + 1 << " of " << o.cycles << " (WEIR_CRASH_SEED=" << seed
                    << "): after SIGKILL and restart weir does not hold what it acknowledged:\n"
                    << problems.summary() << "weir serve log (tail):\n"
                    << srv.log_tail(3000);
      failed = true;
    }
  }
  srv.kill(why);
  {
    // What the storage did meanwhile (so a run shows it exercised checkpoints and reclaim).
    std::ifstream log(dir / "weir.log");
    int checkpoints = 0, reclaiming = 0;
    for (std::string line; std::getline(log, line);) {
      if (line.find("checkpoint at lsn") == std::string::npos || line.find("failed") != std::string::npos)
        continue;
      ++checkpoints;
      if (line.find(", 0 segments reclaimed") == std::string::npos) ++reclaiming;
    }
    std::printf("[crash] weir serve took %d checkpoints, %d of which reclaimed segments\n", checkpoints,
                reclaiming);
  }
  if (failed) {
    std::printf("[crash] data directory and server log kept in %s\n", dir.c_str());
  } else {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

}  // namespace weir::crash_test

// The partition on the simulation's executor (raft::sim_executor) with its log's disk work run as the
// simulation's tasks (sim_disk_worker): the whole partition is single-threaded and a seed replays. A
// command completes only after its record's disk task ran (not before its latency passed), and a crash
// before that task loses the command and nothing before it.
#include <gtest/gtest.h>

#include "replica/partition.h"
#include "replica/wal_recovery.h"
#include "storage/mem_env.h"
#include "support/sim/sim_disk_worker.h"
#include "support/sim/sim_scheduler.h"
#include "unit/streams/command_builders.h"

namespace weir::replica {
namespace {

using namespace std::chrono_literals;
using streams::testing::make_append;
using streams::testing::make_create;

struct quiet_host final : partition_host {
  int durable = 0;
  void on_durable(const streams::outcome&) override { ++durable; }
  void on_rebuilt() override {}
  void on_writes_resumed() override {}
};

std::string text(const streams::read_result& rr) {
  std::string out;
  for (const auto& s : rr.plan.slices) out += s.view();
  return out;
}

// One simulated process: its executor, its disk worker, its partition over the shared mem_env.
struct process {
  raft::sim_executor ex;
  testing::sim_disk_worker worker;
  quiet_host host;
  segment_readers readers;
  std::unique_ptr<partition> part;
  wal_recovery_stats recovered;

  process(raft::sim_scheduler& s, storage::env& env, const clock_source& clock)
      : ex(s), worker(ex, [] { return 5ms; }) {
    part = std::make_unique<partition>(ex, clock, partition_options{}, host);
    wal_options wo;
    wo.data_dir = "/data";
    wo.worker = &worker;
    std::vector<partition*> parts{part.get()};
    auto rec = open_durable_store(env, wo, parts, readers);
    EXPECT_TRUE(rec.has_value()) << rec.err().reason;
    if (rec) recovered = *rec;
  }
  ~process() {
    part->stop();
    part.reset();
  }
};

TEST(partition_sim_test, a_command_completes_after_its_disk_task_and_a_crash_before_it_loses_only_it) {
  raft::sim_scheduler s(7);
  storage::mem_env env;
  manual_clock clock;
  auto p = std::make_unique<process>(s, env, clock);

  int done = 0;
  (void)p->part->submit(make_create("/s"), [&](durable_result& r) { done += r.failure == errc::ok; });
  (void)p->part->submit(make_append("/s", "kept"), [&](durable_result& r) { done += r.failure == errc::ok; });
  s.run_until(s.now_ms() + 4);  // the disk task's latency has not passed
  EXPECT_EQ(done, 0);
  EXPECT_EQ(p->host.durable, 0);
  s.run_until(s.now_ms() + 20);
  EXPECT_EQ(done, 2);
  EXPECT_EQ(p->host.durable, 2);

  (void)p->part->submit(make_append("/s", "lost"), [&](durable_result&) { ++done; });
  s.run_until(s.now_ms() + 1);  // its disk task is queued, not run
  EXPECT_EQ(p->worker.queued(), 1u);
  env.crash();
  p->ex.halt();
  p.reset();
  env.restart();
  while (s.run_one()) {
  }
  EXPECT_EQ(done, 2);  // the lost append never completed

  p = std::make_unique<process>(s, env, clock);
  EXPECT_EQ(p->recovered.records, 2u);
  EXPECT_EQ(text(p->part->read_visible("/s", streams::stream_offset(0), 1 << 20)), "kept");
}

// The same seed and the same commands give the same run, to the task: the partition and its log add
// nothing that depends on a thread's timing.
TEST(partition_sim_test, a_seed_replays_to_the_task) {
  auto run = [](std::uint64_t seed) {
    raft::sim_scheduler s(seed);
    storage::mem_env env;
    manual_clock clock;
    process p(s, env, clock);
    (void)p.part->submit(make_create("/r"));
    for (int i = 0; i < 50; ++i) {
      s.run_until(s.now_ms() + s.uniform(0, 3));
      (void)p.part->submit(make_append("/r", std::string(static_cast<std::size_t>(s.uniform(1, 200)), 'x')));
    }
    s.run_until(s.now_ms() + 100);
    return std::pair(s.tasks_run(), p.host.durable);
  };
  const auto a = run(11);
  EXPECT_EQ(a.second, 51);
  EXPECT_EQ(run(11), a);
}

}  // namespace
}  // namespace weir::replica

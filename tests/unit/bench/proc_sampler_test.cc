#include "bench/proc_sampler.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(proc_sampler, reads_vm_rss_in_mib) {
  EXPECT_DOUBLE_EQ(rss_mib_of_status("Name:\tweir\nVmPeak:\t 9000 kB\nVmRSS:\t    2048 kB\nThreads: 3\n"),
                   2.0);
  EXPECT_TRUE(std::isnan(rss_mib_of_status("Name:\tweir\nVmPeak:\t 9000 kB\n")));
}

TEST(proc_sampler, cpu_seconds_count_fields_after_the_command_name) {
  // The command name may hold spaces and parentheses: fields are counted after the last ')'.
  const std::string stat =
      "4242 (we ir) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 1000000 500";
  EXPECT_DOUBLE_EQ(cpu_seconds_of_stat(stat, 100), 3.0);  // (250 + 50) / 100
  EXPECT_TRUE(std::isnan(cpu_seconds_of_stat("4242 (weir) S 1 2", 100)));
  EXPECT_TRUE(std::isnan(cpu_seconds_of_stat("no parenthesis", 100)));
}

TEST(proc_sampler, the_cgroup_v2_path_is_the_0_colon_colon_line) {
  EXPECT_EQ(cgroup_path_of("0::/system.slice/weir.service\n"), "/system.slice/weir.service");
  EXPECT_EQ(cgroup_path_of("12:memory:/x\n0::/a/b"), "/a/b");
  EXPECT_EQ(cgroup_path_of("12:memory:/x\n"), "");
}

TEST(proc_sampler, the_working_set_is_memory_current_less_inactive_file) {
  const std::string stat = "anon 1000\nfile 4194304\nactive_file 1048576\ninactive_file 3145728\n";
  EXPECT_DOUBLE_EQ(working_set_mib("8388608\n", stat), 5.0);  // 8 MiB - 3 MiB
  EXPECT_DOUBLE_EQ(working_set_mib("8388608\n", "inactive_file 1048576\n"), 7.0);
  EXPECT_TRUE(std::isnan(working_set_mib("", stat)));
  EXPECT_TRUE(std::isnan(working_set_mib("8388608", "anon 1\n")));
}

TEST(proc_sampler, a_process_in_our_own_cgroup_has_no_working_set_of_its_own) {
  EXPECT_TRUE(std::isnan(cgroup_working_set_mib(static_cast<int>(::getpid()))));
}

TEST(proc_sampler, samples_this_process) {
  const auto f = sample_process(::getpid());
  EXPECT_GT(f.rss_mib, 0.0);
  EXPECT_GE(f.fds, 3.0);  // stdin, stdout, stderr at least
  EXPECT_GE(f.cpu_s, 0.0);
  const auto gone = sample_process(0);
  EXPECT_TRUE(std::isnan(gone.rss_mib));
  EXPECT_TRUE(std::isnan(gone.fds));
}

TEST(proc_sampler, waits_for_a_busy_process_and_not_for_an_idle_one) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // idle: sleeps until killed
    for (;;) ::pause();
  }
  EXPECT_TRUE(wait_until_idle({child}, 5.0));
  std::atomic<bool> stop{false};
  std::thread spin([&] {  // this process is busy: a whole core
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  EXPECT_FALSE(wait_until_idle({child, ::getpid()}, 0.6, 0.05, 0.2));
  stop = true;
  spin.join();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(wait_until_idle({child}, 1.0));  // gone: idle
}

}  // namespace
}  // namespace weir::bench

// proc_sampler: what /proc says about a server process on this machine (the PID bench/compare started):
// resident memory, open descriptors and CPU seconds. Values are NaN when the process is gone or /proc
// cannot be read. The parsers are pure and exposed for tests.
#pragma once

#include <string_view>
#include <vector>

namespace weir::bench {

struct proc_figures {
  double rss_mib;
  double fds;
  double cpu_s;
};

proc_figures sample_process(int pid);
// The processes of one server (a cluster's nodes) as one: RSS, descriptors and CPU summed over those
// that can be read (NaN when none can).
proc_figures sample_processes(const std::vector<int>& pids);

// Waits until every process of `pids` used at most `share` of a core over one `window_s` window, or
// `limit_s` passed; true: they were idle. A server still working off a backlog (timed-out requests of
// its own phase) would otherwise take CPU from the next target measured on the same cores. Processes
// that are gone count as idle.
bool wait_until_idle(const std::vector<int>& pids, double limit_s, double share = 0.05,
                     double window_s = 0.5);

// The working set of the cgroup (v2) that `pid` runs in, in MiB: memory.current less the inactive file
// cache (memory.stat inactive_file), the figure Kubernetes calls container_memory_working_set_bytes.
// NaN when that cgroup is this process's own (the server then shares it with the generator and every
// other process in it, so the figure would not be the server's) or cannot be read.
double cgroup_working_set_mib(int pid);
// The cgroup v2 path of a /proc/PID/cgroup text ("0::/a/b" -> "/a/b"), empty if there is none.
std::string_view cgroup_path_of(std::string_view proc_cgroup);
// memory.current bytes less memory.stat's inactive_file, in MiB; NaN if either is missing.
double working_set_mib(std::string_view memory_current, std::string_view memory_stat);

// VmRSS of a /proc/PID/status text, in MiB.
double rss_mib_of_status(std::string_view status);
// utime + stime of a /proc/PID/stat line, in seconds (`ticks_per_s` = sysconf(_SC_CLK_TCK)).
double cpu_seconds_of_stat(std::string_view stat, long ticks_per_s);

}  // namespace weir::bench

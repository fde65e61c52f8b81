// proc_sampler: what /proc says about a server process on this machine (the PID bench/compare started):
// resident memory, open descriptors and CPU seconds. Values are NaN when the process is gone or /proc
// cannot be read. The parsers are pure and exposed for tests.
#pragma once

#include <string_view>

namespace weir::bench {

struct proc_figures {
  double rss_mib;
  double fds;
  double cpu_s;
};

proc_figures sample_process(int pid);

// VmRSS of a /proc/PID/status text, in MiB.
double rss_mib_of_status(std::string_view status);
// utime + stime of a /proc/PID/stat line, in seconds (`ticks_per_s` = sysconf(_SC_CLK_TCK)).
double cpu_seconds_of_stat(std::string_view stat, long ticks_per_s);

}  // namespace weir::bench

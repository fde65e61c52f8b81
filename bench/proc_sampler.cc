#include "bench/proc_sampler.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "bench/bench_report.h"

namespace weir::bench {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

double rss_mib_of_status(std::string_view status) {
  constexpr std::string_view key = "\nVmRSS:";
  auto pos = status.find(key);
  if (pos == std::string_view::npos) return no_value;
  const std::string rest(status.substr(pos + key.size(), 32));
  char* end = nullptr;
  const double kib = std::strtod(rest.c_str(), &end);
  if (end == rest.c_str()) return no_value;
  return kib / 1024.0;
}

double cpu_seconds_of_stat(std::string_view stat, long ticks_per_s) {
  // proc(5): the command name (field 2) is in parentheses and may hold spaces: count fields after the
  // last ')'. utime and stime are fields 14 and 15, i.e. the 12th and 13th after it.
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_s <= 0) return no_value;
  std::string_view rest = stat.substr(close + 1);
  double ticks = 0;
  int field = 2;
  std::size_t i = 0;
  int found = 0;
  while (i < rest.size() && found < 2) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    const auto start = i;
    while (i < rest.size() && rest[i] != ' ') ++i;
    if (start == i) break;
    ++field;
    if (field == 14 || field == 15) {
      ticks += std::strtod(std::string(rest.substr(start, i - start)).c_str(), nullptr);
      ++found;
    }
  }
  if (found < 2) return no_value;
  return ticks / static_cast<double>(ticks_per_s);
}

std::string_view cgroup_path_of(std::string_view proc_cgroup) {
  // cgroups(7): one line per hierarchy, "ID:CONTROLLERS:PATH"; v2's is "0::PATH".
  std::size_t pos = 0;
  while (pos < proc_cgroup.size()) {
    auto eol = proc_cgroup.find('\n', pos);
    if (eol == std::string_view::npos) eol = proc_cgroup.size();
    const auto line = proc_cgroup.substr(pos, eol - pos);
    if (line.rfind("0::", 0) == 0) return line.substr(3);
    pos = eol + 1;
  }
  return {};
}

double working_set_mib(std::string_view memory_current, std::string_view memory_stat) {
  const std::string current(memory_current);
  char* end = nullptr;
  const double bytes = std::strtod(current.c_str(), &end);
  if (end == current.c_str()) return no_value;
  constexpr std::string_view key = "inactive_file ";
  std::size_t at = memory_stat.rfind(key, 0) == 0 ? 0 : memory_stat.find("\n" + std::string(key));
  if (at == std::string_view::npos) return no_value;
  if (at != 0) ++at;
  const std::string value(memory_stat.substr(at + key.size(), 24));
  const double inactive = std::strtod(value.c_str(), &end);
  if (end == value.c_str()) return no_value;
  return (bytes > inactive ? bytes - inactive : 0) / (1024.0 * 1024.0);
}

double cgroup_working_set_mib(int pid) {
  if (pid <= 0) return no_value;
  const std::string theirs(cgroup_path_of(slurp("/proc/" + std::to_string(pid) + "/cgroup")));
  const std::string ours(cgroup_path_of(slurp("/proc/self/cgroup")));
  if (theirs.empty() || theirs == ours) return no_value;
  const std::string dir = "/sys/fs/cgroup" + theirs;
  return working_set_mib(slurp(dir + "/memory.current"), slurp(dir + "/memory.stat"));
}

proc_figures sample_process(int pid) {
  proc_figures f{no_value, no_value, no_value};
  if (pid <= 0) return f;
  const auto base = "/proc/" + std::to_string(pid);
  f.rss_mib = rss_mib_of_status("\n" + slurp(base + "/status"));
  f.cpu_s = cpu_seconds_of_stat(slurp(base + "/stat"), ::sysconf(_SC_CLK_TCK));
  std::error_code ec;
  std::filesystem::directory_iterator it(base + "/fd", ec);
  if (!ec) {
    double n = 0;
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      ++n;
    }
    if (!ec) f.fds = n;
  }
  return f;
}

proc_figures sample_processes(const std::vector<int>& pids) {
  proc_figures sum{no_value, no_value, no_value};
  auto add = [](double& to, double v) {
    if (!std::isnan(v)) to = std::isnan(to) ? v : to + v;
  };
  for (int pid : pids) {
    const proc_figures f = sample_process(pid);
    add(sum.rss_mib, f.rss_mib);
    add(sum.fds, f.fds);
    add(sum.cpu_s, f.cpu_s);
  }
  return sum;
}

bool wait_until_idle(const std::vector<int>& pids, double limit_s, double share, double window_s) {
  using clock = std::chrono::steady_clock;
  const auto end = clock::now() + std::chrono::duration<double>(limit_s);
  for (;;) {
    std::vector<double> before;
    for (int pid : pids) before.push_back(sample_process(pid).cpu_s);
    std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
    bool idle = true;
    for (std::size_t i = 0; i < pids.size(); ++i) {
      const double used = sample_process(pids[i]).cpu_s - before[i];
      if (!std::isnan(used) && used > share * window_s) idle = false;
    }
    if (idle) return true;
    if (clock::now() >= end) return false;
  }
}

}  // namespace weir::bench

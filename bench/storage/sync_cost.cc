// weir-sync-cost: what one write + fdatasync costs on this disk, for the three ways a log file can hold
// the bytes it writes next (docs/storage.md, "Prepared segments"). A program, not a test.
//
//   weir-sync-cost [--dir DIR] [--ops N] [--bytes B] [--rounds R]
//
// For each round and each mode, in turn: a fresh file in DIR, N times pwrite(B bytes) at the end of what
// was written, then fdatasync; prints the median and p90 latency and the device's write requests per
// sync (from /sys/block/<dev>/stat when the device is found, else "-").
//   grow      the file grows with each write (the log's default before prepared segments)
//   reserved  blocks reserved first with fallocate(FALLOC_FL_KEEP_SIZE): unwritten extents
//   zeros     zeros written and fdatasynced first (a prepared segment)
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace {

// The block device's stat file for the file system holding `dir` (whole disk or partition).
std::optional<std::string> device_stat(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
  const std::string p =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) + "/stat";
  if (::access(p.c_str(), R_OK) != 0) return std::nullopt;
  return p;
}

long write_requests(const std::optional<std::string>& stat_file) {
  if (!stat_file) return 0;
  std::ifstream f(*stat_file);
  long v[5] = {};
  for (auto& x : v) f >> x;
  return v[4];  // writes completed
}

bool prepare(int fd, const std::string& mode, std::size_t total) {
  if (mode == "reserved") return ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(total)) == 0;
  if (mode == "zeros") {
    std::vector<char> zeros(1 << 20, 0);
    for (std::size_t off = 0; off < total; off += zeros.size()) {
      if (::pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(off)) < 0) return false;
    }
  }
  return ::fsync(fd) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "weir-sync-cost: the cost of write + fdatasync, growing a file or over reserved or zeroed blocks"};
  std::string dir = "/tmp";
  int ops = 2000;
  std::size_t bytes = 1024;
  int rounds = 2;
  app.add_option("--dir", dir, "directory on the disk to measure");
  app.add_option("--ops", ops, "write + fdatasync pairs per mode and round")->check(CLI::PositiveNumber);
  app.add_option("--bytes", bytes, "bytes per write")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "rounds (the modes alternate within each)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const auto stat_file = device_stat(dir);
  const std::string path = dir + "/weir-sync-cost." + std::to_string(::getpid());
  std::vector<char> buf(bytes, 'x');
  std::printf("%-6s %-9s %10s %10s %16s\n", "round", "mode", "p50 ms", "p90 ms", "dev writes/sync");
  for (int r = 1; r <= rounds; ++r) {
    for (const std::string mode : {"grow", "reserved", "zeros"}) {
      ::unlink(path.c_str());
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) {
        std::perror(path.c_str());
        return 1;
      }
      const std::size_t total = static_cast<std::size_t>(ops) * bytes + (1 << 20);
      if (!prepare(fd, mode, total)) {
        std::perror("prepare");
        return 1;
      }
      std::vector<double> ms;
      ms.reserve(static_cast<std::size_t>(ops));
      const long before = write_requests(stat_file);
      for (int i = 0; i < ops; ++i) {
        const auto t = std::chrono::steady_clock::now();
        if (::pwrite(fd, buf.data(), bytes, static_cast<off_t>(i) * static_cast<off_t>(bytes)) < 0 ||
            ::fdatasync(fd) != 0) {
          std::perror("write");
          return 1;
        }
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
      }
      const long after = write_requests(stat_file);
      ::close(fd);
      ::unlink(path.c_str());
      std::sort(ms.begin(), ms.end());
      char reqs[32] = "-";
      if (stat_file) std::snprintf(reqs, sizeof reqs, "%.2f", double(after - before) / ops);
      std::printf("%-6d %-9s %10.3f %10.3f %16s\n", r, mode.c_str(), ms[ms.size() / 2],
                  ms[ms.size() * 9 / 10], reqs);
    }
  }
  return 0;
}

#include "server/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/log.h"

namespace weir::server {
namespace {

constexpr std::size_t flush_bytes = 32 * 1024;

void append_time(std::string& out, std::chrono::system_clock::time_point at) {
  using namespace std::chrono;
  const auto t = system_clock::to_time_t(at);
  const auto ms = duration_cast<milliseconds>(at.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char ts[40];
  const std::size_t n = std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  out.append(ts, n);
  fmt::format_to(std::back_inserter(out), ".{:03d}Z", static_cast<int>(ms));
}

void append_client(std::string& out, std::uint32_t a) {
  if (a == 0) {
    out += '-';
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}.{}.{}.{}", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff,
                 a & 0xff);
}

// The request line's parts as they came (the parser admits only visible ASCII there); anything else,
// and the quote that delimits them, shows as '?' so that a line cannot be forged.
void append_plain(std::string& out, std::string_view s) {
  if (s.empty()) {
    out += '-';
    return;
  }
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    out += (u > 0x20 && u < 0x7f && c != '"') ? c : '?';
  }
}

}  // namespace

result<std::unique_ptr<access_log>> access_log::open(const std::string& target, bool json, unsigned cores) {
  if (target == "-") return std::unique_ptr<access_log>(new access_log(STDERR_FILENO, false, json, cores));
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    return make_error(std::errc::io_error, "access-log: cannot open " + target + ": " + std::strerror(errno));
  }
  return std::unique_ptr<access_log>(new access_log(fd, true, json, cores));
}

access_log::access_log(int fd, bool owns_fd, bool json, unsigned cores)
    : fd_(fd), owns_fd_(owns_fd), json_(json), cores_(cores) {}

access_log::~access_log() {
  flush_all();
  if (owns_fd_) ::close(fd_);
}

void access_log::format_line(std::string& out, const http::exchange_record& r,
                             std::chrono::system_clock::time_point at, bool json) {
  const double seconds = static_cast<double>(r.total_ns) / 1e9;
  if (json) {
    out += "{\"ts\":\"";
    append_time(out, at);
    out += "\",\"client\":\"";
    append_client(out, r.client);
    out += "\",\"method\":";
    json_writer::append_quoted(out, r.method.empty() ? std::string_view("-") : r.method);
    out += ",\"path\":";
    json_writer::append_quoted(out, r.path.empty() ? std::string_view("-") : r.path);
    fmt::format_to(std::back_inserter(out), ",\"status\":{},\"bytes\":{},\"duration_s\":{:.6f}}}\n", r.status,
                   r.bytes_out, seconds);
    return;
  }
  append_time(out, at);
  out += ' ';
  append_client(out, r.client);
  out += " \"";
  append_plain(out, r.method);
  out += ' ';
  append_plain(out, r.path);
  fmt::format_to(std::back_inserter(out), "\" {} {} {:.6f}\n", r.status, r.bytes_out, seconds);
}

void access_log::write(unsigned core, const http::exchange_record& r) {
  std::string& buf = cores_[core].buf;
  format_line(buf, r, std::chrono::system_clock::now(), json_);
  if (buf.size() >= flush_bytes) flush(core);
}

void access_log::flush(unsigned core) {
  std::string& buf = cores_[core].buf;
  std::size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::write(fd_, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      log::warn("access log: write failed ({}); {} bytes of lines dropped", std::strerror(errno),
                buf.size() - done);
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  buf.clear();
  if (buf.capacity() > 4 * flush_bytes) buf.shrink_to_fit();
}

void access_log::flush_all() {
  for (unsigned i = 0; i < cores_.size(); ++i) flush(i);
}

}  // namespace weir::server

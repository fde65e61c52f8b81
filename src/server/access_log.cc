#include "server/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>

#include "base/json_writer.h"
#include "base/log.h"

namespace weir::server {
namespace {

constexpr std::size_t flush_bytes = 32 * 1024;

void append_time(std::string& out, std::chrono::system_clock::time_point at, access_log::second_cache& c) {
  using namespace std::chrono;
  const std::int64_t ms_total = duration_cast<milliseconds>(at.time_since_epoch()).count();
  const std::int64_t second = ms_total / 1000;
  if (second != c.second) {  // gmtime and strftime once a second, not per line
    const auto t = static_cast<std::time_t>(second);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    c.size = std::strftime(c.text, sizeof c.text, "%Y-%m-%dT%H:%M:%S", &tm);
    c.second = second;
  }
  out.append(c.text, c.size);
  const auto ms = static_cast<int>(ms_total % 1000);
  const char frac[] = {'.', static_cast<char>('0' + ms / 100), static_cast<char>('0' + ms / 10 % 10),
                       static_cast<char>('0' + ms % 10), 'Z'};
  out.append(frac, sizeof frac);
}

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto* e = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, static_cast<std::size_t>(e - buf));
}

void append_client(std::string& out, std::uint32_t a) {
  if (a == 0) {
    out += '-';
    return;
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    append_uint(out, (a >> shift) & 0xff);
    if (shift != 0) out += '.';
  }
}

// Seconds with six decimals, from nanoseconds, in integers (no floating-point formatting per line).
void append_seconds(std::string& out, std::uint64_t ns) {
  const std::uint64_t us = ns / 1000;
  append_uint(out, us / 1'000'000);
  char frac[7] = {'.'};
  std::uint64_t f = us % 1'000'000;
  for (int i = 6; i >= 1; --i, f /= 10) frac[i] = static_cast<char>('0' + f % 10);
  out.append(frac, sizeof frac);
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

std::string_view protocol_name(http::http_protocol p) {
  switch (p) {
    case http::http_protocol::http1_0:
      return "HTTP/1.0";
    case http::http_protocol::h2:
      return "HTTP/2";
    case http::http_protocol::http1_1:
      break;
  }
  return "HTTP/1.1";
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
                             std::chrono::system_clock::time_point at, bool json, second_cache& cache) {
  if (json) {
    out += "{\"ts\":\"";
    append_time(out, at, cache);
    out += "\",\"client\":\"";
    append_client(out, r.client);
    out += "\",\"method\":";
    json_writer::append_quoted(out, r.method.empty() ? std::string_view("-") : r.method);
    out += ",\"path\":";
    json_writer::append_quoted(out, r.path.empty() ? std::string_view("-") : r.path);
    out += ",\"protocol\":\"";
    out += protocol_name(r.protocol);
    out += "\",\"status\":";
    append_uint(out, static_cast<std::uint64_t>(r.status));
    out += ",\"bytes\":";
    append_uint(out, r.bytes_out);
    out += ",\"duration_s\":";
    append_seconds(out, r.total_ns);
    out += "}\n";
    return;
  }
  append_time(out, at, cache);
  out += ' ';
  append_client(out, r.client);
  out += " \"";
  append_plain(out, r.method);
  out += ' ';
  append_plain(out, r.path);
  out += ' ';
  out += protocol_name(r.protocol);
  out += "\" ";
  append_uint(out, static_cast<std::uint64_t>(r.status));
  out += ' ';
  append_uint(out, r.bytes_out);
  out += ' ';
  append_seconds(out, r.total_ns);
  out += '\n';
}

void access_log::write(unsigned core, const http::exchange_record& r) {
  per_core& c = cores_[core];
  std::string& buf = c.buf;
  format_line(buf, r, std::chrono::system_clock::now(), json_, c.second);
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

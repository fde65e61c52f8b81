// access_log: the optional access log (setting access-log): one line per finished request with the
// time, the client's address, the method, the path WITHOUT its query string (a query may carry a
// token: it is never logged), the HTTP version (HTTP/1.1, HTTP/1.0 or HTTP/2), the status, the response bytes
// and the duration. Text for people, or one JSON object a line with --log-format json.
//
// Each core formats its lines into its own buffer (no lock, no shared cache line on the request path);
// a buffer is written out (one write(2), O_APPEND) when it passes 32 KiB, by a once-a-second timer of
// its core (node.cc), and at shutdown. When the setting is empty there is no access_log object and the
// HTTP engine copies nothing for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "http/server.h"

namespace weir::server {

class access_log {
 public:
  // `target`: a file path (created if absent, appended to) or "-" for standard error.
  static result<std::unique_ptr<access_log>> open(const std::string& target, bool json, unsigned cores);
  ~access_log();  // writes what is buffered
  access_log(const access_log&) = delete;
  access_log& operator=(const access_log&) = delete;

  // On core `core`'s thread.
  void write(unsigned core, const http::exchange_record& r);
  void flush(unsigned core);
  // Every core's buffer: only while no core runs (start-up, after the loops stopped).
  void flush_all();

  // The time stamp's second ("2026-12-01T10:00:00"), formatted once per second and core.
  struct second_cache {
    std::int64_t second = -1;
    char text[24] = {};
    std::size_t size = 0;
  };
  // One line (with its line feed) appended to `out`.
  static void format_line(std::string& out, const http::exchange_record& r,
                          std::chrono::system_clock::time_point at, bool json, second_cache& cache);
  static void format_line(std::string& out, const http::exchange_record& r,
                          std::chrono::system_clock::time_point at, bool json) {
    second_cache c;
    format_line(out, r, at, json, c);
  }

 private:
  access_log(int fd, bool owns_fd, bool json, unsigned cores);
  struct per_core {
    std::string buf;
    second_cache second;
  };

  int fd_;
  bool owns_fd_;
  bool json_;
  std::vector<per_core> cores_;
};

}  // namespace weir::server

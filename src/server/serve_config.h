// serve_config: the settings of `weir serve`, from defaults, an optional TOML file and flags (flags win).
// Invalid or unknown settings are start-up errors (exceptions are allowed in config, STYLE.md).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace weir::server {

struct serve_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 4437;  // PROTOCOL.md 13.1
  std::string data_dir = "./weir-data";
  unsigned threads = 0;  // 0: one per CPU, at most 4
  std::int64_t long_poll_timeout_ms = 30'000;
  std::uint64_t body_limit = 64ull << 20;
  std::string log_level = "info";
  std::size_t read_chunk_bytes = 64 * 1024;  // server chunk limit for catch-up reads (5.6)
  std::int64_t sse_close_after_ms = 60'000;  // 5.8 connection lifecycle
  std::int64_t sse_keep_alive_ms = 15'000;
  std::size_t max_path_length = 1024;
  // The write-ahead log: "always" (acknowledge after fdatasync), "interval:MS" or "never".
  std::string fsync = "always";
  bool durable = true;  // false: memory only, no log (tests)
  // Stream data kept in memory, all cores together; older data is read from the log's segment files.
  std::uint64_t hot_bytes = 256ull << 20;
  // A log segment file is rolled once it reaches this size.
  std::uint64_t segment_bytes = 128ull << 20;
  // Log growth (per core) after which the core's state is checkpointed; 0: never.
  std::uint64_t checkpoint_bytes = 256ull << 20;
  // Bytes of writes per core waiting for the disk before further writes get 503 + Retry-After.
  std::uint64_t max_in_flight_bytes = 256ull << 20;
};

struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "HOST:PORT" (IPv4 host, or [IPv6]:PORT).
void apply_listen(serve_config& c, const std::string& listen);

// Reads a TOML file into `c` (keys: listen, data_dir, threads, long_poll_timeout_ms, body_limit,
// log_level, read_chunk_bytes, sse_close_after_ms, sse_keep_alive_ms, max_path_length, fsync, hot_bytes,
// segment_bytes, checkpoint_bytes, max_in_flight_bytes).
void load_config_file(serve_config& c, const std::string& path);

// Range checks of the final configuration.
void validate(const serve_config& c);

}  // namespace weir::server

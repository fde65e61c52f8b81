#include "server/serve_config.h"

#include <toml++/toml.h>

#include <charconv>
#include <set>

#include "base/log.h"
#include "storage/log_writer.h"

namespace weir::server {

void apply_listen(serve_config& c, const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    throw config_error("listen: expected HOST:PORT, got '" + listen + "'");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto digits = std::string_view(listen).substr(colon + 1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || p != digits.data() + digits.size() || port > 65535) {
    throw config_error("listen: invalid port in '" + listen + "'");
  }
  c.host = host;
  c.port = static_cast<std::uint16_t>(port);
}

namespace {
template <class T>
T integer(const toml::node& n, const std::string& key) {
  auto v = n.value<std::int64_t>();
  if (!v || !n.is_integer()) throw config_error("config: '" + key + "' must be an integer");
  if (*v < 0) throw config_error("config: '" + key + "' must not be negative");
  return static_cast<T>(*v);
}
std::string text(const toml::node& n, const std::string& key) {
  auto v = n.value<std::string>();
  if (!v || !n.is_string()) throw config_error("config: '" + key + "' must be a string");
  return *v;
}
}  // namespace

void load_config_file(serve_config& c, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw config_error("config " + path + ": " + std::string(e.description()));
  }
  for (auto&& [k, node] : t) {
    std::string key(k.str());
    if (key == "listen") {
      apply_listen(c, text(node, key));
    } else if (key == "data_dir") {
      c.data_dir = text(node, key);
    } else if (key == "threads") {
      c.threads = integer<unsigned>(node, key);
    } else if (key == "long_poll_timeout_ms") {
      c.long_poll_timeout_ms = integer<std::int64_t>(node, key);
    } else if (key == "body_limit") {
      c.body_limit = integer<std::uint64_t>(node, key);
    } else if (key == "log_level") {
      c.log_level = text(node, key);
    } else if (key == "read_chunk_bytes") {
      c.read_chunk_bytes = integer<std::size_t>(node, key);
    } else if (key == "sse_close_after_ms") {
      c.sse_close_after_ms = integer<std::int64_t>(node, key);
    } else if (key == "sse_keep_alive_ms") {
      c.sse_keep_alive_ms = integer<std::int64_t>(node, key);
    } else if (key == "max_path_length") {
      c.max_path_length = integer<std::size_t>(node, key);
    } else if (key == "fsync") {
      c.fsync = text(node, key);
    } else if (key == "hot_bytes") {
      c.hot_bytes = integer<std::uint64_t>(node, key);
    } else if (key == "segment_bytes") {
      c.segment_bytes = integer<std::uint64_t>(node, key);
    } else if (key == "checkpoint_bytes") {
      c.checkpoint_bytes = integer<std::uint64_t>(node, key);
    } else if (key == "max_in_flight_bytes") {
      c.max_in_flight_bytes = integer<std::uint64_t>(node, key);
    } else {
      throw config_error("config " + path + ": unknown setting '" + key + "'");
    }
  }
}

void validate(const serve_config& c) {
  if (c.threads > 256) throw config_error("threads: at most 256");
  if (c.long_poll_timeout_ms < 1 || c.long_poll_timeout_ms > 3'600'000)
    throw config_error("long_poll_timeout_ms: between 1 and 3600000");
  if (c.body_limit < 1) throw config_error("body_limit: at least 1 byte");
  if (c.body_limit > (1ull << 32) - 1) throw config_error("body_limit: at most 4 GiB - 1");
  if (c.read_chunk_bytes < 1) throw config_error("read_chunk_bytes: at least 1");
  if (c.sse_close_after_ms < 1) throw config_error("sse_close_after_ms: at least 1");
  if (c.sse_keep_alive_ms < 1) throw config_error("sse_keep_alive_ms: at least 1");
  if (c.max_path_length < 2) throw config_error("max_path_length: at least 2");
  static const std::set<std::string> levels = {"trace", "debug", "info", "warn", "error", "off"};
  if (!levels.count(c.log_level))
    throw config_error("log_level: one of trace, debug, info, warn, error, off");
  if (c.data_dir.empty()) throw config_error("data_dir: must not be empty");
  if (c.hot_bytes < (64u << 10)) throw config_error("hot_bytes: at least 64 KiB");
  if (c.segment_bytes < (64u << 10)) throw config_error("segment_bytes: at least 64 KiB");
  if (c.checkpoint_bytes != 0 && c.checkpoint_bytes < (64u << 10))
    throw config_error("checkpoint_bytes: 0 (never) or at least 64 KiB");
  if (c.max_in_flight_bytes < c.body_limit)
    throw config_error("max_in_flight_bytes: at least body_limit (one request must fit)");
  if (!storage::parse_sync_policy(c.fsync)) throw config_error("fsync: always, interval:MS or never");
}

}  // namespace weir::server

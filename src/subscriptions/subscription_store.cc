#include "subscriptions/subscription_store.h"

#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/log.h"

namespace weir::subscriptions {
namespace {

constexpr std::int64_t k_format_version = 1;

error corrupt(std::string reason) {
  return make_error(store_errc::corrupt, std::move(reason));
}

template <class T>
bool get_string(T el, std::string_view key, std::string& out) {
  std::string_view s;
  if (el[key].get(s) != simdjson::SUCCESS) return false;
  out = std::string(s);
  return true;
}

}  // namespace

// The config in the PUT body shape, so loading re-validates it with the same parser.
void write_persisted_config(json_writer& w, const subscription_config& c) {
  w.begin_object();
  w.key("type").value(to_string(c.type));
  if (c.pattern) w.key("pattern").value(*c.pattern);
  if (!c.streams.empty()) {
    w.key("streams").begin_array();
    for (const auto& s : c.streams) w.value(s);
    w.end_array();
  }
  if (c.webhook_url) w.key("webhook").begin_object().key("url").value(*c.webhook_url).end_object();
  if (c.wake_stream) w.key("wake_stream").value(*c.wake_stream);
  w.key("lease_ttl_ms").value(c.lease_ttl_ms);
  if (c.description) w.key("description").value(*c.description);
  w.end_object();
}

result<subscription_config> read_persisted_config(std::string_view json) {
  // Validated when it was created; the development exception may have been on then, and the limits
  // may have been larger. The sender checks the URL again under today's policy before every delivery.
  return parse_subscription_config(json, config_limits{true, 30'000});
}

std::string encode_snapshot(const std::vector<persisted_subscription>& subs) {
  json_writer w;
  w.begin_object().key("version").value(k_format_version).key("subscriptions").begin_array();
  for (const auto& s : subs) {
    w.begin_object();
    w.key("root").value(s.root).key("origin").value(s.origin).key("id").value(s.id);
    w.key("config");
    write_persisted_config(w, s.config);
    w.key("created_at_ms").value(s.created_at_wall_ms);
    w.key("generation").value(static_cast<std::int64_t>(s.generation));
    w.key("failed")
        .value(s.failed)
        .key("failed_attempts")
        .value(static_cast<std::int64_t>(s.failed_attempts));
    w.key("retry_at_ms").value(s.retry_at_wall_ms);
    w.key("links").begin_array();
    for (const auto& [path, l] : s.links) {
      w.begin_object().key("path").value(path);
      w.key("explicit").value(l.explicit_link).key("glob").value(l.glob_link);
      w.key("acked_offset").value(l.acked_offset);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array().end_object();
  return w.take();
}

result<std::vector<persisted_subscription>> decode_snapshot(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) return corrupt("not JSON");
  std::int64_t version = 0;
  if (root["version"].get(version) != simdjson::SUCCESS || version != k_format_version) {
    return corrupt("unknown snapshot version");
  }
  simdjson::dom::array arr;
  if (root["subscriptions"].get(arr) != simdjson::SUCCESS) return corrupt("no subscriptions array");
  std::vector<persisted_subscription> out;
  for (auto el : arr) {
    persisted_subscription s;
    if (!get_string(el, "root", s.root) || !get_string(el, "origin", s.origin) ||
        !get_string(el, "id", s.id)) {
      return corrupt("subscription without root, origin or id");
    }
    simdjson::dom::element cfg;
    if (el["config"].get(cfg) != simdjson::SUCCESS)
      return corrupt(fmt::format("subscription {} has no config", s.id));
    auto parsed = read_persisted_config(simdjson::to_string(cfg));
    if (!parsed) return corrupt(fmt::format("subscription {}: {}", s.id, parsed.err().reason));
    s.config = std::move(*parsed);
    std::int64_t gen = 0, attempts = 0;
    if (el["created_at_ms"].get(s.created_at_wall_ms) != simdjson::SUCCESS ||
        el["generation"].get(gen) != simdjson::SUCCESS || el["failed"].get(s.failed) != simdjson::SUCCESS ||
        el["failed_attempts"].get(attempts) != simdjson::SUCCESS ||
        el["retry_at_ms"].get(s.retry_at_wall_ms) != simdjson::SUCCESS || gen < 0 || attempts < 0) {
      return corrupt(fmt::format("subscription {} has bad counters", s.id));
    }
    s.generation = static_cast<std::uint64_t>(gen);
    s.failed_attempts = static_cast<int>(attempts);
    simdjson::dom::array links;
    if (el["links"].get(links) != simdjson::SUCCESS)
      return corrupt(fmt::format("subscription {} has no links", s.id));
    for (auto l : links) {
      std::string path;
      stream_link link;
      if (!get_string(l, "path", path) || !get_string(l, "acked_offset", link.acked_offset) ||
          l["explicit"].get(link.explicit_link) != simdjson::SUCCESS ||
          l["glob"].get(link.glob_link) != simdjson::SUCCESS) {
        return corrupt(fmt::format("subscription {} has a bad link", s.id));
      }
      s.links.emplace(std::move(path), std::move(link));
    }
    out.push_back(std::move(s));
  }
  return out;
}

result<std::optional<std::string>> read_snapshot_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<std::string>{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(store_errc::io, fmt::format("open {}: {}", path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return std::optional<std::string>(ss.str());
}

}  // namespace weir::subscriptions

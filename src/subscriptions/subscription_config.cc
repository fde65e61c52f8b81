#include "subscriptions/subscription_config.h"

#include <simdjson.h>

#include <algorithm>

#include <fmt/format.h>

#include "base/json_writer.h"
#include "subscriptions/crypto_util.h"
#include "subscriptions/glob_matcher.h"
#include "subscriptions/url_validator.h"

namespace weir::subscriptions {
namespace {

error invalid(std::string reason) {
  return make_error(config_errc::invalid_request, std::move(reason));
}

// Reads an optional string member: absent and null both give nullopt; other types are an error.
result<std::optional<std::string>> optional_string(simdjson::dom::object obj, std::string_view name) {
  auto v = obj[name];
  if (v.error() == simdjson::NO_SUCH_FIELD) return std::optional<std::string>{};
  if (v.is_null()) return std::optional<std::string>{};
  std::string_view s;
  if (v.get(s) != simdjson::SUCCESS) return invalid(fmt::format("'{}' must be a string", name));
  return std::optional<std::string>(std::string(s));
}

}  // namespace

std::string_view to_string(delivery_type t) {
  return t == delivery_type::webhook ? "webhook" : "pull-wake";
}

bool valid_subscription_id(std::string_view id) {
  if (id.empty() || id.size() > 200) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.' || c == '~' || c == ':';
    if (!ok) return false;
  }
  return true;
}

result<subscription_config> parse_subscription_config(std::string_view body, const config_limits& limits) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) {
    return make_error(config_errc::invalid_json, "body is not valid JSON");
  }
  simdjson::dom::object obj;
  if (root.get(obj) != simdjson::SUCCESS) return invalid("body must be a JSON object");

  subscription_config cfg;
  auto type = optional_string(obj, "type");
  if (!type) return type.err();
  if (!*type) return invalid("'type' is required");
  if (**type == "webhook") {
    cfg.type = delivery_type::webhook;
  } else if (**type == "pull-wake") {
    cfg.type = delivery_type::pull_wake;
  } else {
    return invalid("'type' must be \"webhook\" or \"pull-wake\"");
  }

  auto pattern = optional_string(obj, "pattern");
  if (!pattern) return pattern.err();
  if (*pattern) {
    // A pattern is kept and matched against every stream event: its size is bounded (docs/limits.md).
    if (limits.max_pattern_bytes != 0 && (*pattern)->size() > limits.max_pattern_bytes) {
      return make_error(config_errc::limit_exceeded,
                        fmt::format("'pattern' is longer than max-subscription-pattern-bytes ({} bytes)",
                                    limits.max_pattern_bytes));
    }
    auto g = glob_matcher::compile(**pattern);
    if (!g) return invalid("'pattern' is not a valid glob");
    // PROTOCOL.md 6: `__ds` as first segment is reserved for control APIs, never an application stream.
    std::string_view first = std::string_view(g->pattern()).substr(0, g->pattern().find('/'));
    if (first == "__ds" || first == "." || first == "..")
      return invalid("'pattern' addresses a reserved path");
    cfg.pattern = g->pattern();
  }

  auto streams = obj["streams"];
  if (streams.error() != simdjson::NO_SUCH_FIELD && !streams.is_null()) {
    simdjson::dom::array arr;
    if (streams.get(arr) != simdjson::SUCCESS) return invalid("'streams' must be an array of strings");
    for (auto el : arr) {
      std::string_view s;
      if (el.get(s) != simdjson::SUCCESS) return invalid("'streams' must be an array of strings");
      auto n = normalize_stream_path(s);
      if (!n) return invalid(fmt::format("'streams' has an invalid stream path '{}'", s));
      cfg.streams.push_back(std::move(*n));
    }
    std::sort(cfg.streams.begin(), cfg.streams.end());
    cfg.streams.erase(std::unique(cfg.streams.begin(), cfg.streams.end()), cfg.streams.end());
  }
  if (!cfg.pattern && cfg.streams.empty())
    return invalid("at least one of 'pattern' or 'streams' is required");

  auto webhook = obj["webhook"];
  bool has_webhook = webhook.error() != simdjson::NO_SUCH_FIELD && !webhook.is_null();
  auto wake = optional_string(obj, "wake_stream");
  if (!wake) return wake.err();
  if (cfg.type == delivery_type::webhook) {
    if (*wake) return invalid("'wake_stream' is only for pull-wake subscriptions");
    simdjson::dom::object wh;
    if (!has_webhook || webhook.get(wh) != simdjson::SUCCESS) return invalid("'webhook' object is required");
    auto url = optional_string(wh, "url");
    if (!url) return url.err();
    if (!*url) return invalid("'webhook.url' is required");
    auto checked =
        validate_webhook_url(**url, url_policy{limits.allow_localhost_webhooks, limits.webhook_allow_hosts});
    if (!checked) return make_error(config_errc::webhook_url_rejected, checked.err().reason);
    cfg.webhook_url = std::move(**url);
  } else {
    if (has_webhook) return invalid("'webhook' is only for webhook subscriptions");
    if (!*wake) return invalid("'wake_stream' is required for pull-wake subscriptions");
    auto n = normalize_stream_path(**wake);
    if (!n) return invalid("'wake_stream' is not a valid stream path");
    // A subscription woken by appends to its own wake stream would wake itself forever.
    if (std::binary_search(cfg.streams.begin(), cfg.streams.end(), *n)) {
      return invalid("'wake_stream' cannot also be a subscribed stream");
    }
    cfg.wake_stream = std::move(*n);
  }

  cfg.lease_ttl_ms = limits.default_lease_ttl_ms;
  auto lease = obj["lease_ttl_ms"];
  if (lease.error() != simdjson::NO_SUCH_FIELD && !lease.is_null()) {
    std::int64_t ms = 0;
    double d = 0;
    if (lease.get(ms) != simdjson::SUCCESS) {
      // 30000.0 is an integer too; anything fractional is not.
      if (lease.get(d) != simdjson::SUCCESS || d != static_cast<double>(static_cast<std::int64_t>(d))) {
        return invalid("'lease_ttl_ms' must be an integer");
      }
      ms = static_cast<std::int64_t>(d);
    }
    if (ms < k_min_lease_ttl_ms || ms > k_max_lease_ttl_ms) {
      return invalid("'lease_ttl_ms' must be between 1000 and 600000");
    }
    cfg.lease_ttl_ms = ms;
  }

  auto desc = optional_string(obj, "description");
  if (!desc) return desc.err();
  if (*desc && (*desc)->size() > 4096) return invalid("'description' is longer than 4096 bytes");
  cfg.description = std::move(*desc);
  return cfg;
}

std::string subscription_config::canonical_json() const {
  json_writer w;
  w.begin_object();
  w.key("type").value(to_string(type));
  w.key("pattern");
  pattern ? w.value(*pattern) : w.null();
  w.key("streams").begin_array();
  for (const auto& s : streams) w.value(s);
  w.end_array();
  w.key("webhook_url");
  webhook_url ? w.value(*webhook_url) : w.null();
  w.key("wake_stream");
  wake_stream ? w.value(*wake_stream) : w.null();
  w.key("lease_ttl_ms").value(lease_ttl_ms);
  w.key("description");
  description ? w.value(*description) : w.null();
  w.end_object();
  return w.take();
}

std::string subscription_config::hash() const {
  return to_hex(sha256(canonical_json()));
}

}  // namespace weir::subscriptions

#include "subscriptions/subscription_json.h"

#include <ctime>

#include <fmt/format.h>

#include "base/json_writer.h"

namespace weir::subscriptions {
namespace {

void write_optional(json_writer& w, std::string_view key, const std::optional<std::string>& v) {
  w.key(key);
  v ? w.value(*v) : w.null();
}

void write_wake_streams(json_writer& w, const wake_state& wake) {
  w.key("streams").begin_array();
  for (const auto& e : wake.snapshot) {
    w.begin_object();
    w.key("path").value(e.path).key("link_type").value(e.link_type);
    w.key("acked_offset").value(e.acked_offset).key("tail_offset").value(e.tail_offset);
    w.key("has_pending").value(e.has_pending);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string format_timestamp(std::int64_t wall_ms) {
  std::time_t secs = static_cast<std::time_t>(wall_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, wall_ms % 1000);
}

std::string render_subscription(const subscription_state& s, const signing_info& signing) {
  const auto& cfg = s.config();
  json_writer w;
  w.begin_object();
  w.key("id").value(s.id()).key("subscription_id").value(s.id());
  w.key("type").value(to_string(cfg.type));
  write_optional(w, "pattern", cfg.pattern);
  w.key("streams").begin_array();
  for (const auto& [path, link] : s.links()) {
    w.begin_object();
    w.key("path").value(path).key("link_type").value(link.link_type());
    w.key("acked_offset").value(link.acked_offset);
    w.end_object();
  }
  w.end_array();
  w.key("webhook");
  if (cfg.webhook_url) {
    w.begin_object().key("url").value(*cfg.webhook_url);
    w.key("signing").begin_object();
    w.key("alg").value("ed25519").key("kid").value(signing.kid).key("jwks_url").value(signing.jwks_url);
    w.end_object().end_object();
  } else {
    w.null();
  }
  write_optional(w, "wake_stream", cfg.wake_stream);
  w.key("lease_ttl_ms").value(cfg.lease_ttl_ms);
  w.key("created_at").value(format_timestamp(s.created_at_wall_ms()));
  w.key("status").value(s.failed() ? "failed" : "active");
  w.key("generation").value(static_cast<std::int64_t>(s.generation()));
  write_optional(w, "description", cfg.description);
  w.end_object();
  return w.take();
}

std::string render_notification(const subscription_state& s, const wake_state& wake,
                                std::string_view callback_url, std::string_view callback_token) {
  json_writer w;
  w.begin_object();
  w.key("subscription_id").value(s.id());
  w.key("wake_id").value(wake.wake_id);
  w.key("generation").value(static_cast<std::int64_t>(wake.generation));
  write_wake_streams(w, wake);
  w.key("callback_url").value(callback_url);
  w.key("callback_token").value(callback_token);
  w.end_object();
  return w.take();
}

std::string render_claim(const wake_state& wake, std::string_view token, std::int64_t lease_ttl_ms) {
  json_writer w;
  w.begin_object();
  w.key("wake_id").value(wake.wake_id);
  w.key("generation").value(static_cast<std::int64_t>(wake.generation));
  w.key("token").value(token);
  write_wake_streams(w, wake);
  w.key("lease_ttl_ms").value(lease_ttl_ms);
  w.end_object();
  return w.take();
}

std::string render_wake_event(const subscription_state& s, const wake_state& wake, std::int64_t ts_wall_ms) {
  json_writer w;
  w.begin_object();
  w.key("type").value("wake");
  w.key("subscription_id").value(s.id());
  w.key("wake_id").value(wake.wake_id);
  w.key("generation").value(static_cast<std::int64_t>(wake.generation));
  // PROTOCOL.md 7.2 names one "stream": the first with pending work; "streams" lists them all.
  std::vector<std::string_view> pending;
  for (const auto& e : wake.snapshot) {
    if (e.has_pending) pending.push_back(e.path);
  }
  w.key("stream");
  pending.empty() ? w.null() : w.value(pending.front());
  w.key("streams").begin_array();
  for (auto p : pending) w.value(p);
  w.end_array();
  w.key("ts").value(ts_wall_ms);
  w.end_object();
  return w.take();
}

std::string render_error(std::string_view code, std::string_view message) {
  json_writer w;
  w.begin_object().key("error").begin_object();
  w.key("code").value(code).key("message").value(message);
  w.end_object().end_object();
  return w.take();
}

}  // namespace weir::subscriptions

#include "subscriptions/control_responses.h"

#include <simdjson.h>

#include <cctype>

#include "subscriptions/subscription_config.h"
#include "subscriptions/subscription_json.h"

namespace weir::subscriptions::detail {

control_response json(int status, std::string body) {
  control_response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

control_response fail(int status, std::string_view code, std::string_view message) {
  return json(status, render_error(code, message));
}

control_response no_content() {
  control_response r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

control_response method_not_allowed(std::string allow) {
  auto r = fail(405, "METHOD_NOT_ALLOWED", "method not allowed on this resource");
  r.headers.emplace_back("Allow", std::move(allow));
  return r;
}

control_response unavailable(std::string_view message) {
  auto r = fail(503, "UNAVAILABLE", message);
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

control_response from_config_error(const error& e) {
  switch (e.as<config_errc>()) {
    case config_errc::invalid_json:
      return fail(400, "INVALID_JSON", e.reason);
    case config_errc::webhook_url_rejected:
      return fail(400, "WEBHOOK_URL_REJECTED", e.reason);
    case config_errc::limit_exceeded:
      return fail(400, "LIMIT_EXCEEDED", e.reason);
    case config_errc::invalid_request:
      break;
  }
  return fail(400, "INVALID_REQUEST", e.reason);
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = hex(s[i + 1]);
    int lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::optional<std::string_view> bearer(std::string_view authorization) {
  constexpr std::string_view prefix = "Bearer ";
  if (authorization.size() <= prefix.size()) return std::nullopt;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return std::nullopt;
    }
  }
  auto t = authorization.substr(prefix.size());
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  if (t.empty()) return std::nullopt;
  return t;
}

bool says_done(std::string_view body) {
  if (body.empty()) return false;
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) return false;
  bool done = false;
  return root["done"].get(done) == simdjson::SUCCESS && done;
}

}  // namespace weir::subscriptions::detail

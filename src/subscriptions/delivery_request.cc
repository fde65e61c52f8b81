#include "subscriptions/delivery_request.h"

#include <simdjson.h>

#include <fmt/format.h>

#include "subscriptions/glob_matcher.h"
#include "subscriptions/subscription_config.h"

namespace weir::subscriptions {
namespace {

error invalid(std::string reason) {
  return make_error(config_errc::invalid_request, std::move(reason));
}

result<simdjson::dom::object> parse_object(simdjson::dom::parser& parser,
                                           const simdjson::padded_string& body) {
  simdjson::dom::element root;
  if (parser.parse(body).get(root) != simdjson::SUCCESS) {
    return make_error(config_errc::invalid_json, "body is not valid JSON");
  }
  simdjson::dom::object obj;
  if (root.get(obj) != simdjson::SUCCESS) return invalid("body must be a JSON object");
  return obj;
}

// wake_id (string) and generation (non-negative integer), both required.
status read_fence(simdjson::dom::object obj, std::string& wake_id, std::uint64_t& generation) {
  std::string_view w;
  if (obj["wake_id"].get(w) != simdjson::SUCCESS || w.empty()) return invalid("'wake_id' string is required");
  wake_id = std::string(w);
  auto g = obj["generation"];
  std::uint64_t u = 0;
  std::int64_t i = 0;
  if (g.get(u) == simdjson::SUCCESS) {
    generation = u;
  } else if (g.get(i) == simdjson::SUCCESS && i >= 0) {
    generation = static_cast<std::uint64_t>(i);
  } else {
    return invalid("'generation' integer is required");
  }
  return {};
}

}  // namespace

result<ack_request> parse_ack_request(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  auto obj = parse_object(parser, padded);
  if (!obj) return obj.err();
  ack_request r;
  if (auto st = read_fence(*obj, r.wake_id, r.generation); !st) return st.err();
  auto acks = (*obj)["acks"];
  if (acks.error() != simdjson::NO_SUCH_FIELD && !acks.is_null()) {
    simdjson::dom::array arr;
    if (acks.get(arr) != simdjson::SUCCESS) return invalid("'acks' must be an array");
    for (auto el : arr) {
      std::string_view stream, offset;
      if (el["stream"].get(stream) != simdjson::SUCCESS || el["offset"].get(offset) != simdjson::SUCCESS) {
        return invalid("each ack needs 'stream' and 'offset' strings");
      }
      auto n = normalize_stream_path(stream);
      if (!n) return invalid(fmt::format("ack has an invalid stream path '{}'", stream));
      if (offset.empty() || offset.size() > 256) return invalid("ack has an invalid offset");
      r.acks.push_back(stream_ack{std::move(*n), std::string(offset)});
    }
  }
  auto done = (*obj)["done"];
  if (done.error() != simdjson::NO_SUCH_FIELD && !done.is_null()) {
    if (done.get(r.done) != simdjson::SUCCESS) return invalid("'done' must be a boolean");
  }
  return r;
}

result<release_request> parse_release_request(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  auto obj = parse_object(parser, padded);
  if (!obj) return obj.err();
  release_request r;
  if (auto st = read_fence(*obj, r.wake_id, r.generation); !st) return st.err();
  return r;
}

result<std::string> parse_claim_request(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  auto obj = parse_object(parser, padded);
  if (!obj) return obj.err();
  std::string_view worker;
  if ((*obj)["worker"].get(worker) != simdjson::SUCCESS || worker.empty() || worker.size() > 200) {
    return invalid("'worker' string (1-200 bytes) is required");
  }
  return std::string(worker);
}

result<std::vector<std::string>> parse_membership_request(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  auto obj = parse_object(parser, padded);
  if (!obj) return obj.err();
  simdjson::dom::array arr;
  if ((*obj)["streams"].get(arr) != simdjson::SUCCESS) return invalid("'streams' array is required");
  std::vector<std::string> out;
  for (auto el : arr) {
    std::string_view s;
    if (el.get(s) != simdjson::SUCCESS) return invalid("'streams' must be an array of strings");
    auto n = normalize_stream_path(s);
    if (!n) return invalid(fmt::format("'streams' has an invalid stream path '{}'", s));
    out.push_back(std::move(*n));
  }
  return out;
}

}  // namespace weir::subscriptions

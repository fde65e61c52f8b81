#include "cli/sse_batch_reader.h"

#include <fmt/format.h>

#include "base/base64.h"

namespace weir::cli {

status sse_batch_reader::feed(std::string_view body, const std::function<void(sse_batch&)>& on_batch) {
  if (!error_.empty()) return error{1, error_};
  const bool ok = parser_.feed(body, [&](const client::sse_event& e) {
    if (error_.empty()) on_event(e, on_batch);
  });
  if (!ok && error_.empty()) error_ = "SSE: an event exceeds the size limit";
  if (!error_.empty()) return error{1, error_};
  return {};
}

void sse_batch_reader::on_event(const client::sse_event& e, const std::function<void(sse_batch&)>& on_batch) {
  if (e.type == "data") {
    if (!base64_) {
      pending_.events.emplace_back(e.data);
      return;
    }
    auto bytes = base64_decode(e.data);
    if (!bytes) {
      error_ = fmt::format("SSE data event: {}", bytes.err().reason);
      return;
    }
    pending_.events.push_back(std::move(*bytes));
    return;
  }
  if (e.type != "control") return;  // PROTOCOL.md 5.8 names two events; others are not ours to judge
  simdjson::dom::element doc;
  std::string_view offset;
  if (json_.parse(e.data.data(), e.data.size()).get(doc) != simdjson::SUCCESS ||
      doc["streamNextOffset"].get_string().get(offset) != simdjson::SUCCESS || offset.empty()) {
    error_ = fmt::format("SSE control event without streamNextOffset: {}", e.data.substr(0, 200));
    return;
  }
  pending_.next_offset.assign(offset);
  bool flag = false;
  pending_.up_to_date = doc["upToDate"].get_bool().get(flag) == simdjson::SUCCESS && flag;
  flag = false;
  pending_.closed = doc["streamClosed"].get_bool().get(flag) == simdjson::SUCCESS && flag;
  on_batch(pending_);
  pending_ = sse_batch{};
}

}  // namespace weir::cli

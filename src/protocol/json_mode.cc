#include "protocol/json_mode.h"

#include <simdjson.h>

#include "streams/state_machine.h"

namespace weir::protocol {

namespace {
simdjson::dom::parser& thread_parser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}
}  // namespace

bool is_json_content_type(std::string_view content_type) {
  return streams::same_media_type(content_type, "application/json");
}

streams::payload json_payload(std::string_view body) {
  streams::payload p;
  simdjson::padded_string padded(body);
  simdjson::dom::element doc;
  if (thread_parser().parse(padded).get(doc) != simdjson::SUCCESS) {
    p.json_invalid = true;
    return p;
  }
  std::string stored;
  stored.reserve(body.size() + 1);
  if (doc.is_array()) {
    // 9.1.2: flatten exactly one level.
    simdjson::dom::array array;
    if (doc.get_array().get(array) != simdjson::SUCCESS) {
      p.json_invalid = true;
      return p;
    }
    for (simdjson::dom::element el : array) {
      stored += simdjson::minify(el);
      stored += ',';
      ++p.messages;
    }
    if (p.messages == 0) {
      p.json_empty_array = true;
      return p;
    }
  } else {
    stored = simdjson::minify(doc);
    stored += ',';
    p.messages = 1;
  }
  p.bytes = streams::make_chunk(std::move(stored));
  return p;
}

streams::payload make_payload(std::string_view body, std::string_view content_type) {
  if (body.empty()) return {};
  if (is_json_content_type(content_type)) return json_payload(body);
  streams::payload p;
  p.bytes = streams::make_chunk(std::string(body));
  return p;
}

std::string json_array(const std::vector<streams::chunk_slice>& slices) {
  std::size_t n = 2;
  for (const auto& s : slices) n += s.size;
  std::string out;
  out.reserve(n);
  out.push_back('[');
  for (const auto& s : slices) out.append(s.view());
  if (out.size() > 1 && out.back() == ',') out.pop_back();
  out.push_back(']');
  return out;
}

streams::payload json_prefix(std::string_view stored_record, std::uint64_t count) {
  streams::payload p;
  if (count == 0) return p;
  std::string array = "[" + std::string(stored_record);
  if (array.back() == ',') array.pop_back();
  array.push_back(']');
  // Walk the stored form message by message: re-serialize the first `count` elements.
  simdjson::padded_string padded(array);
  simdjson::dom::element doc;
  if (thread_parser().parse(padded).get(doc) != simdjson::SUCCESS) return p;
  simdjson::dom::array elements;
  if (doc.get_array().get(elements) != simdjson::SUCCESS) return p;
  std::string stored;
  for (simdjson::dom::element el : elements) {
    if (p.messages == count) break;
    stored += simdjson::minify(el);
    stored += ',';
    ++p.messages;
  }
  p.bytes = streams::make_chunk(std::move(stored));
  return p;
}

}  // namespace weir::protocol

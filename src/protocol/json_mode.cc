#include "protocol/json_mode.h"

#include <simdjson.h>

#include "streams/state_machine.h"

namespace weir::protocol {

namespace {

// The byte range of one JSON value inside the scanned text.
struct value_span {
  std::size_t begin;
  std::size_t end;
};

// RFC 8259 validation of one JSON text, without building anything: the spans of the top-level value
// (or, when it is an array, of its elements) are all that JSON mode needs, since messages are stored
// as the client sent them (numbers are never re-printed: `1e2` stays `1e2`, and integers of any length
// are accepted, 8259 section 6). Iterative, with a depth limit, so no input can exhaust the stack.
// UTF-8 is checked separately (simdjson::validate_utf8, the whole text at once).
class json_scanner {
 public:
  static constexpr std::size_t max_depth = 1024;

  explicit json_scanner(std::string_view text) : s_(text) {}

  // True when the text is one valid JSON value with optional surrounding whitespace. `spans` gets
  // the elements of a top-level array, or the top-level value itself.
  bool scan(std::vector<value_span>& spans, bool& is_array) {
    skip_ws();
    is_array = i_ < s_.size() && s_[i_] == '[';
    const std::size_t root_begin = i_;
    std::size_t element_begin = 0;
    enum class expect : std::uint8_t { value, key, after_value } next = expect::value;
    while (true) {
      switch (next) {
        case expect::value:
          skip_ws();
          if (i_ == s_.size()) return false;
          if (is_array && stack_.size() == 1) element_begin = i_;
          next = expect::after_value;
          if (s_[i_] == '{' || s_[i_] == '[') {
            const char close = s_[i_] == '{' ? '}' : ']';
            const bool object = s_[i_] == '{';
            if (stack_.size() == max_depth) return false;  // this container would be one level deeper
            ++i_;
            skip_ws();
            if (i_ < s_.size() && s_[i_] == close) {
              ++i_;  // empty: a complete value
            } else {
              stack_.push_back(close);
              next = object ? expect::key : expect::value;
            }
          } else if (!scalar()) {
            return false;
          }
          break;
        case expect::key:
          skip_ws();
          if (i_ == s_.size() || s_[i_] != '"' || !string()) return false;
          skip_ws();
          if (i_ == s_.size() || s_[i_] != ':') return false;
          ++i_;
          next = expect::value;
          break;
        case expect::after_value: {
          // A value just ended at i_.
          if (stack_.empty()) {
            if (!is_array) spans.push_back({root_begin, i_});
            skip_ws();
            return i_ == s_.size();
          }
          if (is_array && stack_.size() == 1) spans.push_back({element_begin, i_});
          skip_ws();
          if (i_ == s_.size()) return false;
          const char c = s_[i_++];
          if (c == ',') {
            next = stack_.back() == '}' ? expect::key : expect::value;
          } else if (c == stack_.back()) {
            stack_.pop_back();  // the container is a value that just ended
          } else {
            return false;
          }
          break;
        }
      }
    }
  }

 private:
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }

  bool scalar() {
    switch (s_[i_]) {
      case '"':
        return string();
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  bool digits() {
    const std::size_t from = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > from;
  }

  // 8259 section 6: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  bool number() {
    if (s_[i_] == '-') ++i_;
    if (i_ == s_.size()) return false;
    if (s_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return false;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return false;
    }
    return true;
  }

  static bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  // 8259 section 7: no control characters; escapes \" \\ \/ \b \f \n \r \t \uXXXX.
  bool string() {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') continue;
      if (i_ == s_.size()) return false;
      const char e = s_[i_++];
      if (e == 'u') {
        if (i_ + 4 > s_.size()) return false;
        for (std::size_t k = 0; k < 4; ++k)
          if (!is_hex(s_[i_ + k])) return false;
        i_ += 4;
      } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        return false;
      }
    }
    return false;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::vector<char> stack_;
};

// The spans of `text`'s messages (see json_scanner); false when it is not valid JSON.
bool scan_messages(std::string_view text, std::vector<value_span>& spans, bool& is_array) {
  if (!simdjson::validate_utf8(text.data(), text.size())) return false;
  return json_scanner(text).scan(spans, is_array);
}

}  // namespace

bool is_json_content_type(std::string_view content_type) {
  return streams::same_media_type(content_type, "application/json");
}

streams::payload json_payload(std::string_view body) {
  streams::payload p;
  std::vector<value_span> spans;
  bool is_array = false;
  if (!scan_messages(body, spans, is_array)) {
    p.json_invalid = true;
    return p;
  }
  // 9.1.2: an array is flattened exactly one level. Each message is kept byte for byte as sent.
  if (is_array && spans.empty()) {
    p.json_empty_array = true;  // 9.1.3
    return p;
  }
  std::string stored;
  stored.reserve(body.size() + spans.size());
  for (const value_span& v : spans) {
    stored.append(body.substr(v.begin, v.end - v.begin));
    stored += ',';
  }
  p.messages = spans.size();
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
  // The stored form is "m1,...,mN,": as an array, its elements are the messages, byte for byte.
  std::vector<value_span> spans;
  bool is_array = false;
  if (!json_scanner(array).scan(spans, is_array)) return p;
  std::string stored;
  for (const value_span& v : spans) {
    if (p.messages == count) break;
    stored.append(std::string_view(array).substr(v.begin, v.end - v.begin));
    stored += ',';
    ++p.messages;
  }
  p.bytes = streams::make_chunk(std::move(stored));
  return p;
}

}  // namespace weir::protocol

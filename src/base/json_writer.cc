#include "base/json_writer.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace weir {

void json_writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_items_.empty()) {
    if (has_items_.back()) out_ += ',';
    has_items_.back() = true;
  }
}

json_writer& json_writer::begin_object() {
  before_value();
  out_ += '{';
  has_items_.push_back(false);
  return *this;
}

json_writer& json_writer::end_object() {
  WEIR_ASSERT(!has_items_.empty() && !after_key_, "unbalanced end_object in '{}'", out_);
  has_items_.pop_back();
  out_ += '}';
  return *this;
}

json_writer& json_writer::begin_array() {
  before_value();
  out_ += '[';
  has_items_.push_back(false);
  return *this;
}

json_writer& json_writer::end_array() {
  WEIR_ASSERT(!has_items_.empty() && !after_key_, "unbalanced end_array in '{}'", out_);
  has_items_.pop_back();
  out_ += ']';
  return *this;
}

json_writer& json_writer::key(std::string_view k) {
  WEIR_ASSERT(!has_items_.empty() && !after_key_, "key '{}' outside an object", k);
  if (has_items_.back()) out_ += ',';
  has_items_.back() = true;
  append_quoted(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

json_writer& json_writer::value(std::string_view s) {
  before_value();
  append_quoted(out_, s);
  return *this;
}

json_writer& json_writer::value(std::int64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}

json_writer& json_writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

json_writer& json_writer::null() {
  before_value();
  out_ += "null";
  return *this;
}

json_writer& json_writer::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

// RFC 8259 7: '"', '\\' and control characters must be escaped; everything else (including UTF-8) is
// copied as is. The input is expected to be valid UTF-8 (it came from a parsed JSON document or from us).
void json_writer::append_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string json_writer::quoted(std::string_view s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

}  // namespace weir

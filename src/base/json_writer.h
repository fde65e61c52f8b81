// json_writer: builds compact JSON text (RFC 8259) into a string, escaping strings as it goes. Used for
// every JSON body the subscription layer emits (API responses, webhook notifications, wake events); its
// string escaper also serves the bench's results.json. Single-threaded; keep one per output.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

class json_writer {
 public:
  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  // The name of the next member (inside an object only).
  json_writer& key(std::string_view k);

  json_writer& value(std::string_view s);
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(std::int64_t n);
  json_writer& value(bool b);
  json_writer& null();
  // Inserts already-serialised JSON as one value (caller guarantees it is valid JSON).
  json_writer& raw(std::string_view json);

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

  // Appends `s` as a quoted JSON string to `out`.
  static void append_quoted(std::string& out, std::string_view s);
  // `s` as a quoted JSON string.
  static std::string quoted(std::string_view s);

 private:
  void before_value();

  std::string out_;
  // Per open container: true once it holds a member/element (a comma is needed before the next one).
  std::vector<bool> has_items_;
  bool after_key_ = false;
};

}  // namespace weir

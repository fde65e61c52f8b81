#include "protocol/sse_format.h"

#include <cstdint>
#include <string>

#include "streams/state_machine.h"

namespace weir::protocol {

namespace {

constexpr char base64_table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// RFC 4648 4: encodes the whole 3-byte groups of `in` at the end of `out`; returns the bytes left over.
std::size_t append_base64_groups(std::string& out, std::string_view in) {
  const auto* src = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t groups = in.size() / 3;
  std::size_t at = out.size();
  out.resize(at + groups * 4);
  char* dst = out.data() + at;
  for (std::size_t i = 0; i < groups * 3; i += 3, dst += 4) {
    std::uint32_t v = (std::uint32_t{src[i]} << 16) | (std::uint32_t{src[i + 1]} << 8) | src[i + 2];
    dst[0] = base64_table[(v >> 18) & 63];
    dst[1] = base64_table[(v >> 12) & 63];
    dst[2] = base64_table[(v >> 6) & 63];
    dst[3] = base64_table[v & 63];
  }
  return in.size() - groups * 3;
}

// An SSE reader drops one space after "data:" (WHATWG HTML, "Interpreting an event stream"), so a line
// that begins with a space gets one more, which the reader strips. Other lines are written "data:line",
// as the conformance suite expects.
void keep_leading_space(std::string& out, std::string_view line) {
  if (!line.empty() && line.front() == ' ') out += ' ';
}

}  // namespace

void sse_data_writer::begin(std::string& out) {
  out += "event: data\ndata:";
  line_start_ = true;
}

void sse_data_writer::add(std::string& out, std::string_view bytes) {
  if (base64_) {
    // Complete the group carried over from the previous piece first.
    while (carry_n_ > 0 && carry_n_ < 3 && !bytes.empty()) {
      if (carry_n_ == 2) {
        char group[3] = {static_cast<char>(carry_[0]), static_cast<char>(carry_[1]), bytes[0]};
        append_base64_groups(out, std::string_view(group, 3));
        carry_n_ = 0;
      } else {
        carry_[carry_n_++] = static_cast<unsigned char>(bytes[0]);
      }
      bytes.remove_prefix(1);
    }
    if (carry_n_ > 0) return;  // still short of a group
    std::size_t left = append_base64_groups(out, bytes);
    for (std::size_t i = 0; i < left; ++i)
      carry_[i] = static_cast<unsigned char>(bytes[bytes.size() - left + i]);
    carry_n_ = left;
    return;
  }
  if (bytes.empty()) return;
  std::size_t start = 0;
  if (after_cr_ && bytes[0] == '\n') start = 1;  // the LF of a CRLF cut in two
  after_cr_ = false;
  while (start < bytes.size()) {
    std::size_t brk = bytes.find_first_of("\r\n", start);
    std::size_t end = brk == std::string_view::npos ? bytes.size() : brk;
    if (end > start) {
      if (line_start_ && bytes[start] == ' ') out += ' ';  // see keep_leading_space
      line_start_ = false;
      out.append(bytes.substr(start, end - start));
    }
    if (brk == std::string_view::npos) return;
    out += "\ndata:";
    line_start_ = true;
    start = brk + 1;
    if (bytes[brk] == '\r') {
      if (start == bytes.size()) {
        after_cr_ = true;
      } else if (bytes[start] == '\n') {
        ++start;
      }
    }
  }
}

void sse_data_writer::finish(std::string& out) {
  if (base64_ && carry_n_ > 0) {
    std::uint32_t v = std::uint32_t{carry_[0]} << 16;
    if (carry_n_ == 2) v |= std::uint32_t{carry_[1]} << 8;
    out += base64_table[(v >> 18) & 63];
    out += base64_table[(v >> 12) & 63];
    out += carry_n_ == 2 ? base64_table[(v >> 6) & 63] : '=';
    out += '=';
    carry_n_ = 0;
  }
  after_cr_ = false;
  out += "\n\n";
}

void append_data_event(std::string& out, std::string_view payload) {
  out += "event: data\n";
  if (payload.find('\n') == std::string_view::npos && payload.find('\r') == std::string_view::npos) {
    out += "data:";
    keep_leading_space(out, payload);
    out += payload;
    out += "\n\n";
    return;
  }
  std::size_t start = 0;
  while (true) {
    std::size_t brk = payload.find_first_of("\r\n", start);
    out += "data:";
    keep_leading_space(out, payload.substr(start, brk == std::string_view::npos ? brk : brk - start));
    if (brk == std::string_view::npos) {
      out.append(payload.substr(start));
      out += '\n';
      break;
    }
    out.append(payload.substr(start, brk - start));
    out += '\n';
    start = brk + 1;
    if (payload[brk] == '\r' && start < payload.size() && payload[start] == '\n') ++start;
  }
  out += '\n';
}

void append_control_event(std::string& out, const control_fields& c) {
  // Offsets and cursors are [0-9_] only, so no JSON escaping is needed.
  out += "event: control\ndata:{\"streamNextOffset\":\"";
  out += c.next_offset;
  out += '"';
  if (c.cursor) {
    out += ",\"streamCursor\":\"";
    out += *c.cursor;
    out += '"';
  }
  if (c.up_to_date || c.closed) out += ",\"upToDate\":true";
  if (c.closed) out += ",\"streamClosed\":true";
  out += "}\n\n";
}

void append_event_id(std::string& out, std::string_view id) {
  out += "id:";
  out += id;
  out += '\n';
}

void append_retry(std::string& out, unsigned ms) {
  out += "retry:";
  out += std::to_string(ms);
  out += "\n\n";
}

std::string base64_encode(std::string_view in) {
  static constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out((in.size() + 2) / 3 * 4, '=');
  const auto* src = reinterpret_cast<const unsigned char*>(in.data());
  char* dst = out.data();
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3, dst += 4) {
    std::uint32_t v = (std::uint32_t{src[i]} << 16) | (std::uint32_t{src[i + 1]} << 8) | src[i + 2];
    dst[0] = table[(v >> 18) & 63];
    dst[1] = table[(v >> 12) & 63];
    dst[2] = table[(v >> 6) & 63];
    dst[3] = table[v & 63];
  }
  std::size_t rest = in.size() - i;
  if (rest > 0) {
    std::uint32_t v = std::uint32_t{src[i]} << 16;
    if (rest == 2) v |= std::uint32_t{src[i + 1]} << 8;
    dst[0] = table[(v >> 18) & 63];
    dst[1] = table[(v >> 12) & 63];
    if (rest == 2) dst[2] = table[(v >> 6) & 63];
  }
  return out;
}

bool sse_needs_base64(std::string_view content_type) {
  std::string ct = streams::normalize_content_type(content_type);
  return !(ct.rfind("text/", 0) == 0 || ct == "application/json");
}

}  // namespace weir::protocol

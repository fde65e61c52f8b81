#include "protocol/sse_format.h"

#include "streams/state_machine.h"

namespace weir::protocol {

void append_data_event(std::string& out, std::string_view payload) {
  out += "event: data\n";
  if (payload.find('\n') == std::string_view::npos && payload.find('\r') == std::string_view::npos) {
    out += "data:";
    out += payload;
    out += "\n\n";
    return;
  }
  std::size_t start = 0;
  while (true) {
    std::size_t brk = payload.find_first_of("\r\n", start);
    out += "data:";
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

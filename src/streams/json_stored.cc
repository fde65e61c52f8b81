#include "streams/json_stored.h"

namespace weir::streams {

std::size_t whole_messages_prefix(std::string_view stored) {
  std::size_t depth = 0;
  std::size_t end = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const char c = stored[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        ++depth;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case ',':
        if (depth == 0) end = i + 1;
        break;
      default:
        break;
    }
  }
  return end;
}

}  // namespace weir::streams

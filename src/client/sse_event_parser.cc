#include "client/sse_event_parser.h"

namespace weir::client {

bool sse_event_parser::feed(std::string_view bytes, const sink& on_event) {
  if (failed_) return false;
  std::size_t i = 0;
  if (after_cr_ && !bytes.empty() && bytes[0] == '\n') i = 1;  // the LF of a CRLF split across pieces
  after_cr_ = false;
  while (i < bytes.size()) {
    // Find the next line end in the rest of this piece.
    std::size_t j = i;
    while (j < bytes.size() && bytes[j] != '\n' && bytes[j] != '\r') ++j;
    if (j == bytes.size()) {
      line_.append(bytes.substr(i));
      if (line_.size() + data_.size() > max_event_bytes_) failed_ = true;
      return !failed_;
    }
    std::string_view line = bytes.substr(i, j - i);
    if (!line_.empty()) {
      line_.append(line);
      line = line_;
    }
    process_line(line, on_event);
    line_.clear();
    if (data_.size() > max_event_bytes_) {
      failed_ = true;
      return false;
    }
    if (bytes[j] == '\r') {
      if (j + 1 == bytes.size()) {
        after_cr_ = true;
        return true;
      }
      if (bytes[j + 1] == '\n') ++j;
    }
    i = j + 1;
  }
  return true;
}

void sse_event_parser::process_line(std::string_view line, const sink& on_event) {
  if (line.empty()) {
    dispatch(on_event);
    return;
  }
  if (line[0] == ':') return;  // a comment (servers send them as keep-alives)
  std::string_view field = line;
  std::string_view value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);  // one optional space
  }
  if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    type_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
  }
  // "retry" and unknown fields are ignored.
}

void sse_event_parser::dispatch(const sink& on_event) {
  if (has_data_) {
    ++events_;
    on_event(sse_event{type_.empty() ? std::string_view("message") : std::string_view(type_), data_, id_});
  }
  data_.clear();
  type_.clear();
  has_data_ = false;
}

}  // namespace weir::client

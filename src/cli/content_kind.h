// content_kind: how `weir stream read` prints a stream, from its content type. PROTOCOL.md 9.1 (JSON
// mode: reads return arrays of messages) and 5.8 (SSE carries text/* and application/json as text,
// everything else as base64). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace weir::cli {

enum class content_kind { text, json, binary };

// Media type compared case-insensitively, parameters (";charset=...") ignored.
content_kind classify_content_type(std::string_view content_type);

// The messages of a JSON-mode read body or SSE data event (a JSON array), each minified.
result<std::vector<std::string>> json_array_messages(std::string_view array_text);

}  // namespace weir::cli

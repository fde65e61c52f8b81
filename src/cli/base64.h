// base64: RFC 4648 section 4 decoding, for SSE data events of binary streams (PROTOCOL.md 5.8: the
// server base64-encodes them and may split the text over several data: lines). Pure.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace weir::cli {

// Standard base64 with padding (for `read --json` of a binary stream).
std::string base64_encode(std::string_view bytes);

// Decodes standard base64 with padding; CR and LF anywhere are skipped (PROTOCOL.md 5.8: the client
// removes them before decoding). Anything else outside the alphabet, or a length that is not a multiple
// of 4, is an error.
result<std::string> base64_decode(std::string_view text);

}  // namespace weir::cli

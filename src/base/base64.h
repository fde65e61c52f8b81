// base64: RFC 4648 encodings, in one place for every module: the standard alphabet with padding
// (section 4: binary streams over SSE, PROTOCOL.md 5.8) and the URL-safe alphabet without padding
// (section 5: JWTs, JWKs, webhook signatures). Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace weir {

// Standard alphabet, '=' padding.
std::string base64_encode(std::string_view bytes);
// Standard alphabet with padding; CR and LF anywhere are skipped (PROTOCOL.md 5.8: a client removes
// them before decoding). Anything else outside the alphabet, misplaced padding or a length that is not
// a multiple of 4 is an error.
result<std::string> base64_decode(std::string_view text);

// URL-safe alphabet ('-', '_'), no padding.
std::string base64url_encode(std::string_view bytes);
// Strict: padding, characters outside the alphabet, whitespace, impossible lengths and non-zero unused
// bits are refused (so that one byte string has exactly one text).
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace weir

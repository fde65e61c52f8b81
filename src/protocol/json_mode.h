// JSON mode (PROTOCOL.md 9.1): validation (RFC 8259; UTF-8 by simdjson), one-level array flattening,
// the stored form ("m1,m2,...,mN," so records concatenate) and the read form (a JSON array). Each
// message is stored exactly as the client sent it (9.1.2), only the whitespace around it dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "streams/types.h"

namespace weir::protocol {

// A request body for a JSON stream as a payload in stored form. `[]` gives json_empty_array (an
// error on POST, an empty stream on PUT, 9.1.3); invalid JSON gives json_invalid (9.1.4).
streams::payload json_payload(std::string_view body);

// A payload for any content type: JSON processing when `content_type` is application/json, the bytes
// as they are otherwise.
streams::payload make_payload(std::string_view body, std::string_view content_type);

// The read form of stored JSON slices: "[m1,...,mN]" ("[]" when empty).
std::string json_array(const std::vector<streams::chunk_slice>& slices);

// The stored form of the first `count` messages of a stored JSON record (fork sub-offsets, 4.2).
streams::payload json_prefix(std::string_view stored_record, std::uint64_t count);

bool is_json_content_type(std::string_view content_type);

}  // namespace weir::protocol

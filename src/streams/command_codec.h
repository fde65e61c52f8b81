// Binary encoding of commands, for the write-ahead log and replication. Format (little-endian):
//   u8 kind, then the fields in declaration order: strings and byte blobs as varint length + bytes,
//   integers as varints (signed: zigzag), optionals as a u8 presence flag then the value, bools as u8.
// fork_resolution.inherited is not encoded (it is recomputed from the source on replay).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "streams/command.h"

namespace weir::streams {

enum class codec_errc { truncated = 1, bad_kind, bad_value };

std::string encode(const command& c);
result<command> decode(std::string_view bytes);

}  // namespace weir::streams

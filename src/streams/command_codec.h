// Binary encoding of commands, for the write-ahead log and replication. Format (little-endian, the
// primitives of wire.h): u8 kind, then the fields in declaration order: strings and byte blobs as
// varint length + bytes, integers as varints (signed: zigzag), optionals as a u8 presence flag then the
// value, bools as u8. Kind 8 is a delete_command with hold_ms > 0 (path, now_ms, hold_ms); a delete
// without a hold keeps kind 3. Kind 9 is a create_command whose fork has an origin
// (fork_resolution::origin): kind 1's fields, then the origin's group and index (varints); any other
// create keeps kind 1, so entries written before kind 9 existed decode as forks without an origin.
// Likewise kind 10 is a fork_retain_command naming its fork (kind 6's fields, then the fork's path),
// kind 11 a fork_release_command naming its origin (kind 7's source, then the origin's group and index),
// and kind 12 a fork_tombstone_command (path, origin group, origin index, group, now_ms); a retain
// without a fork and a release without an origin keep kinds 6 and 7. Kind 13 is a fork_retain_command
// carrying a record found in the bucket (fork_retain_command::point_record): kind 10's fields (the fork's
// path may be empty), then the record's end and message count (varints). Kind 14 is a fork_retain_command
// whose record decides (fork_retain_command::record_decides): kind 10's fields (the fork's path may be
// empty), then the record as an optional (end and message count).
// fork_resolution.source_log is not encoded (recovery links the fork to its source again).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "streams/command.h"

namespace weir::streams {

// The record type of a command in a log (a single node's write-ahead log, a cluster node's data log);
// the command's own kind byte follows in the payload.
inline constexpr std::uint8_t command_record_type = 1;

enum class codec_errc { truncated = 1, bad_kind, bad_value };

// The encoding of `c`. When `data_offset` is non-null and `c` carries data that becomes a record (a
// create_command's non-empty `initial`, an append_command's non-empty `body`), *data_offset is set to
// the byte offset in the returned string where that payload's bytes (payload.bytes, exactly) begin, so
// the hot tier can read the record back from the log (disk_location::data_offset). Otherwise
// *data_offset is left unchanged. A fork's materialized prefix is not marked.
std::string encode(const command& c, std::uint32_t* data_offset = nullptr);
// The same, into `out` (replaced; its capacity is reused: the log's hot path encodes every command).
void encode_into(const command& c, std::string& out, std::uint32_t* data_offset = nullptr);
// The command encoded in `bytes`: codec_errc::bad_kind, truncated or bad_value when it is damaged.
// `data_offset`, when non-null: set as encode() sets it (where the record's bytes begin in `bytes`).
result<command> decode(std::string_view bytes, std::uint32_t* data_offset = nullptr);

}  // namespace weir::streams

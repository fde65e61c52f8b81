// output_format: what `weir stream` prints for each command, as text for people and shell variables, or
// with --json as one JSON object per line. Pure: values in, text out (the caller writes it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/content_kind.h"
#include "cli/exit_code.h"

namespace weir::cli {

// HEAD (PROTOCOL.md 5.5).
struct stream_info {
  std::string path;
  std::string offset;  // Stream-Next-Offset: the tail
  std::string content_type;
  bool closed = false;
  std::optional<std::string> ttl;  // Stream-TTL, seconds, as sent
  std::optional<std::string> expires_at;
};

// text: "offset: ...\ncontent_type: ...\nclosed: false\n" (+ ttl:, expires_at: when set)
// json: {"path":...,"offset":...,"content_type":...,"closed":false,"ttl":3600,"expires_at":null}
std::string format_head(const stream_info& info, bool json);

// create and fork: text prints the tail offset; json {"path","created","offset","closed"}.
// `created` is false when an identical stream already existed (200 instead of 201).
std::string format_created(std::string_view path, bool created, std::string_view offset, bool closed,
                           bool json);

// append: text prints the new tail offset; json {"path","offset","appends","closed"}.
std::string format_appended(std::string_view path, std::string_view offset, std::size_t appends, bool closed,
                            bool json);

// close: text prints the final offset; json {"path","offset","closed":true}.
std::string format_closed(std::string_view path, std::string_view offset, bool json);

// delete: text prints nothing; json {"path","deleted":true}.
std::string format_deleted(std::string_view path, bool json);

// One response of a read, or one SSE batch: the data (bytes; for a JSON stream the messages).
struct read_batch {
  content_kind kind = content_kind::binary;
  std::string data;                   // text and binary streams
  std::vector<std::string> messages;  // JSON streams: minified messages
  std::string next_offset;
  bool up_to_date = false;
  bool closed = false;
};

// read: text prints the bytes as they are (JSON streams: one message per line); json prints one object
// per batch: {"offset":NEXT,"up_to_date":..,"closed":..} plus "data" (text), "messages" (JSON streams)
// or "data_base64" (binary).
std::string format_read_batch(const read_batch& b, bool json);

// An error: the line for standard error ("weir stream head /v1/stream/x: 404 Not Found: ...").
// `status` is 0 when no response arrived.
std::string format_error_text(std::string_view command, std::string_view path, int status,
                              std::string_view message);
// ... and with --json, the object for standard output: {"error":"not_found","status":404,"message":..}.
std::string format_error_json(exit_code code, std::string_view path, int status, std::string_view message);

}  // namespace weir::cli

// json_stored: message boundaries in a JSON stream's stored form (PROTOCOL.md 9.1; protocol/json_mode.h
// writes it: each message followed by a comma, "m1,m2,...,mN,", so records concatenate). Bytes that come
// back from the cold tier's objects are a byte range of that form, not whole records: a read of them must
// end at a message boundary so that the JSON array it answers with holds whole messages.
//
// Pure; any thread.
#pragma once

#include <cstddef>
#include <string_view>

namespace weir::streams {

// The length of the longest prefix of `stored` (which starts at a message boundary) that holds whole
// messages: just past the last comma outside every string, array and object. 0 when no message ends in
// it. Every stored message is valid JSON (checked when it was appended), so the scan needs no parser.
std::size_t whole_messages_prefix(std::string_view stored);

}  // namespace weir::streams

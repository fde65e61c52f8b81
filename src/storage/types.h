// Strong types and the error codes of the storage module (STYLE.md: no raw uint64_t offset crosses a
// module boundary).
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/strong_id.h"

namespace weir::storage {

// Log sequence number: the 1-based index of a record in one core's log. Assigned by the writer, contiguous
// (no gaps) across segments and restarts. lsn{0} means "before the first record".
using lsn = strong_id<struct lsn_tag, std::uint64_t>;
// A segment file's number: starting at 1, +1 per new segment, never reused. The ids on disk may have gaps
// where a checkpoint reclaimed segments (log-format.md, "Recovery rules").
using segment_id = strong_id<struct segment_id_tag, std::uint64_t>;

// Where a record starts on disk: a segment and the byte offset of its header in that file. Used by the
// hot tier to pread a stream's data by log position.
struct log_position {
  segment_id segment;
  std::uint64_t offset = 0;
  auto operator<=>(const log_position&) const = default;
};

// storage's own error codes, carried in weir::error::code.
enum class errc : int {
  io_error = 1,  // EIO and other OS errors: the server answers 503
  no_space,      // ENOSPC / EDQUOT: the server answers 507
  corruption,    // bad CRC or framing outside a torn tail: start-up stops
  not_found,
  already_exists,
  closed,  // the writer is stopping or stopped
  invalid_argument,
  poisoned,  // an I/O error the writer could not undo: restart (recovery) needed; 503
  busy,      // held by another process (the data directory's lock)
};

inline const char* errc_name(errc e) {
  switch (e) {
    case errc::io_error:
      return "io_error";
    case errc::no_space:
      return "no_space";
    case errc::corruption:
      return "corruption";
    case errc::not_found:
      return "not_found";
    case errc::already_exists:
      return "already_exists";
    case errc::closed:
      return "closed";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::busy:
      return "busy";
    case errc::poisoned:
      return "poisoned";
  }
  return "unknown";
}

inline const std::error_category& error_category_of(errc) {
  static const named_error_category<errc> c("storage");
  return c;
}

inline errc errc_of(const error& e) {
  return e.as<errc>();
}

}  // namespace weir::storage

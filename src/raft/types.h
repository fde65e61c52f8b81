// Strong ids and the error codes of the raft module (STYLE.md: no raw uint64_t index or term crosses a
// module boundary). The values are libraft's (raft_id, raft_term, raft_index are unsigned long long), so
// the glue converts with .value() and a constructor, nothing else.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/strong_id.h"

namespace weir::raft {

// A Raft group: one replicated log (64 by default, fixed when the cluster is created).
using group_id = strong_id<struct group_id_tag, std::uint32_t>;
// A node of the cluster (libraft's raft_id; never 0).
using node_id = strong_id<struct node_id_tag, std::uint64_t>;
// A Raft log index (1-based; 0 means "none").
using log_index = strong_id<struct log_index_tag, std::uint64_t>;
// A Raft term (0 means "never voted, never bootstrapped").
using term_id = strong_id<struct term_id_tag, std::uint64_t>;

// raft's own error codes, carried in weir::error::code.
enum class errc : int {
  malformed = 1,  // bytes from another node or from the disk that do not decode
  corruption,     // the node log is damaged before its tail
  io_error,       // the disk failed (the node log is poisoned until restart)
  closed,         // the node log or a group is stopping
  unknown_group,
};

inline const char* errc_name(errc e) {
  switch (e) {
    case errc::malformed:
      return "malformed";
    case errc::corruption:
      return "corruption";
    case errc::io_error:
      return "io_error";
    case errc::closed:
      return "closed";
    case errc::unknown_group:
      return "unknown_group";
  }
  return "unknown";
}

inline const std::error_category& error_category_of(errc) {
  static const named_error_category<errc> c("raft");
  return c;
}

}  // namespace weir::raft

// replica::errc: how a command can fail in the partition once the state machine accepted it: its
// commit path could not make it durable, or the partition refuses writes for now. The HTTP front maps
// each to a status in one place (protocol/errors.cc, status_for(replica::errc)).
#pragma once

#include <cstdint>
#include <system_error>

#include "base/result.h"

namespace weir::replica {

enum class errc : std::uint8_t {
  ok = 0,
  storage_full,             // the log's disk is full (ENOSPC, EDQUOT)
  storage_unavailable,      // the log or a segment could not be read or written
  writes_backlogged,        // too many writes waiting for the disk
  cluster_unavailable,      // no leader of the stream's group reachable in time: nothing written
  cluster_outcome_unknown,  // proposed, then leadership was lost or time ran out: it may still commit
  cluster_left,             // this node was removed from the cluster: it serves no stream any more
  cold_backlogged,          // the node's disk holds local-bytes of data not yet in the bucket
};

inline const char* errc_name(errc e) {
  switch (e) {
    case errc::ok:
      return "ok";
    case errc::storage_full:
      return "storage_full";
    case errc::storage_unavailable:
      return "storage_unavailable";
    case errc::writes_backlogged:
      return "writes_backlogged";
    case errc::cluster_unavailable:
      return "cluster_unavailable";
    case errc::cluster_outcome_unknown:
      return "cluster_outcome_unknown";
    case errc::cluster_left:
      return "cluster_left";
    case errc::cold_backlogged:
      return "cold_backlogged";
  }
  return "unknown code";
}

inline const std::error_category& error_category_of(errc) {
  static const named_error_category<errc> c("replica");
  return c;
}

}  // namespace weir::replica

#include "protocol/errors.h"

namespace weir::protocol {

http_status status_for(errc e) {
  switch (e) {
    case errc::ok:
      return {200, "ok"};
    case errc::bad_path:
      return {400, "invalid stream path"};
    case errc::path_too_long:
      return {414, "stream path too long"};
    case errc::method_not_allowed:
      return {405, "method not allowed"};
    case errc::bad_offset:
      return {400, "invalid offset"};
    case errc::live_needs_offset:
      return {400, "live mode requires an offset"};
    case errc::bad_live:
      return {400, "invalid live mode"};
    case errc::bad_ttl:
      return {400, "invalid Stream-TTL"};
    case errc::bad_expires_at:
      return {400, "invalid Stream-Expires-At"};
    case errc::ttl_and_expires_at:
      return {400, "Stream-TTL and Stream-Expires-At are exclusive"};
    case errc::bad_producer:
      return {400, "invalid producer headers"};
    case errc::empty_producer_id:
      return {400, "empty Producer-Id"};
    case errc::empty_body:
      return {400, "empty body"};
    case errc::missing_content_type:
      return {400, "Content-Type required"};
    case errc::bad_fork_offset:
      return {400, "invalid Stream-Fork-Offset"};
    case errc::bad_sub_offset:
      return {400, "invalid Stream-Fork-Sub-Offset"};
    case errc::sub_offset_without_fork:
      return {400, "Stream-Fork-Sub-Offset requires Stream-Forked-From"};
    case errc::sub_offset_without_offset:
      return {400, "Stream-Fork-Sub-Offset requires Stream-Fork-Offset"};
    case errc::reserved_path:
      return {404, "reserved __ds path"};
    case errc::body_too_large:
      return {413, "body too large"};
  }
  return {500, "internal error"};
}

http_status status_for(streams::errc e) {
  using streams::errc;
  switch (e) {
    case errc::ok:
      return {200, "ok"};
    case errc::not_found:
      return {404, "stream not found"};
    case errc::gone:
      return {410, "stream is gone"};
    case errc::config_mismatch:
      return {409, "stream exists with a different configuration"};
    case errc::source_not_found:
      return {404, "fork source not found"};
    case errc::source_gone:
      return {409, "fork source was deleted"};
    case errc::bad_fork_offset:
      return {400, "fork offset beyond the source stream"};
    case errc::bad_sub_offset:
      return {400, "invalid fork sub-offset"};
    case errc::content_type_mismatch:
      return {409, "content type mismatch"};
    case errc::closed:
      return {409, "stream is closed"};
    case errc::seq_regression:
      return {409, "Stream-Seq regression"};
    case errc::stale_epoch:
      return {403, "stale producer epoch"};
    case errc::epoch_needs_seq_zero:
      return {400, "a new producer epoch must start at seq 0"};
    case errc::seq_gap:
      return {409, "producer sequence gap"};
    case errc::invalid_json:
      return {400, "invalid JSON"};
    case errc::empty_json_array:
      return {400, "empty JSON array"};
  }
  return {500, "internal error"};
}

}  // namespace weir::protocol

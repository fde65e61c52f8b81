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
      return {405, "method not allowed", stream_methods};
    case errc::bad_offset:
      return {400,
              "invalid offset: use -1 (the start), now (the tail), or an offset the server returned in "
              "Stream-Next-Offset"};
    case errc::bad_last_event_id:
      return {400,
              "invalid Last-Event-ID: use an id the server sent in an SSE event (an offset), -1 (the start) "
              "or now (the tail)"};
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
    case errc::producer_id_too_long:
      return {400, "Producer-Id too long: at most 256 bytes"};
    case errc::content_type_too_long:
      return {400, "Content-Type too long: at most 256 bytes"};
    case errc::stream_quota:
      return {403, "stream quota reached: this node already holds max-streams streams; delete some first"};
    case errc::empty_producer_id:
      return {400, "empty Producer-Id"};
    case errc::empty_body:
      return {400, "empty body"};
    case errc::missing_content_type:
      return {400, "Content-Type missing: an append with a body must send the stream's content type"};
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
    case errc::encoded_reserved_path:
      return {400, "a percent-encoded __ds segment: the reserved __ds prefix must be sent as it is"};
    case errc::server_path:
      return {405, "the server's own path, not a stream", server_path_methods};
    case errc::server_path_missing:
      return {404, "the server's own path, not a stream"};
    case errc::bad_content_type:
      return {400, "invalid Content-Type: expected a media type such as text/plain or application/json"};
    case errc::bad_host:
      return {400, "invalid Host: expected host[:port]"};
    // RFC 6750 3: the Bearer challenge, with an error attribute when a token was sent.
    case errc::token_missing:
      return {401, "unauthorized", {}, {}, R"(Bearer realm="weir")"};
    case errc::token_invalid:
      return {401, "invalid token", {}, {}, R"(Bearer realm="weir", error="invalid_token")"};
    case errc::token_request_invalid:
      return {400, "invalid token request", {}, {}, R"(Bearer realm="weir", error="invalid_request")"};
    case errc::access_denied:
      return {403, "forbidden", {}, {}, R"(Bearer realm="weir", error="insufficient_scope")"};
  }
  return {500, "internal error"};
}

http_status status_for(replica::errc e) {
  switch (e) {
    case replica::errc::ok:
      return {200, "ok"};
    // PROTOCOL.md has no code for a failed disk: 507 for a full disk (RFC 4918 11.5), 503 otherwise.
    // Retry-After: the core rebuilds its state and retries the disk within about a second. The body
    // never names files or system errors (they are logged).
    case replica::errc::storage_full:
      return {507, "insufficient storage", {}, "1"};
    case replica::errc::storage_unavailable:
      return {503, "storage unavailable", {}, "1"};
    case replica::errc::writes_backlogged:
      return {503, "too many writes waiting for the disk; retry", {}, "1"};
    // A cluster without a quorum for the stream's group (docs/replication.md).
    case replica::errc::cluster_unavailable:
      return {503, "the cluster cannot reach a quorum for this stream; retry", {}, "1"};
    case replica::errc::cluster_outcome_unknown:
      return {503,
              "the write may or may not have been applied (leader lost); retry with a producer id to be safe",
              {},
              "1"};
    // The cold tier cannot upload (the bucket is down or slow) and the node's budget of data not yet
    // uploaded is full (docs/cold-tier.md); the upload that frees room may take a while.
    case replica::errc::cold_backlogged:
      return {503,
              "the node's disk budget for data not yet in the bucket is full (uploads are behind); retry",
              {},
              "5"};
    // No Retry-After: asking this node again never helps.
    case replica::errc::cluster_left:
      return {
          503,
          "this node is no longer a member of the cluster: send requests to a member (GET /cluster/members)"};
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
    case errc::deleted_with_forks:
      return {409,
              "the path is held by a deleted stream that live forks still read from: delete the forks, or "
              "use another path"};
    case errc::path_held:
      return {
          409,
          "the path belonged to a stream deleted moments ago and is held for deleted-path-hold-ms (so that "
          "caches never mix the two streams): use another path, or wait"};
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

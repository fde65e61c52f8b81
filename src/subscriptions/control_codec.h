// control_codec: a control request and its answer as bytes, for a cluster node that passes a request
// to the node leading the subscription's raft group (a leader call, docs/subscriptions.md "Cluster")
// and gets the answer back. Little-endian:
//
//   request:  u8 method | root | rest | origin | authorization | body        (each string: u32 length, bytes)
//   response: u16 status | content_type | u16 header count | (name, value)* | body
//
// Decoding is strict (the bytes come from another node): every length is checked against what is left,
// the method must be one weir knows, and the input must be used up exactly. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "subscriptions/service.h"
#include "subscriptions/subscription_manager.h"

namespace weir::subscriptions {

// A control_request that owns its strings.
struct owned_control_request {
  http::method method = http::method::get;
  std::string body;
  std::string authorization;
  std::string root;
  std::string rest;
  std::string origin;
  // Views of this object's strings: valid while it lives and is not changed.
  control_request view() const { return control_request{method, body, authorization, root, rest, origin}; }
};

std::vector<std::byte> encode_control_request(const control_request& r);
result<owned_control_request> decode_control_request(std::span<const std::byte> bytes);

std::vector<std::byte> encode_control_response(const control_response& r);
result<control_response> decode_control_response(std::span<const std::byte> bytes);

}  // namespace weir::subscriptions

// subscription_replica: a cluster node's copy of the subscriptions of the whole cluster and of every
// node's webhook signing public key, built by applying the committed subscription entries of every raft
// group, in each group's log order, on every node (docs/subscriptions.md, "Cluster"). The node that leads
// a subscription's group loads it from here into its subscription_manager, which serves and delivers it;
// the other nodes only keep this copy, ready for the day they lead the group.
//
// An entry's payload (after the cluster entry header, whose kind says "subscriptions"):
//
//   u8 op = 1 (records) | subscription_log records (the journal's framing: length, CRC32C, JSON)
//   u8 op = 2 (node key) | u64 node id | u16 kid length | kid | u16 x length | x
//
// Integers little-endian. Decoding is strict: a payload that does not decode exactly is malformed.
// Pure; single-threaded (the home loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "subscriptions/subscription_store.h"

namespace weir::subscriptions {

// One node's webhook signing public key (signing_key::kid, signing_key::public_x).
struct node_public_key {
  std::string kid;
  std::string x;
  bool operator==(const node_public_key&) const = default;
};

// A decoded entry payload: records (a view into the payload) or a node's key.
struct records_entry {
  std::span<const std::byte> records;
};
struct key_entry {
  std::uint64_t node = 0;
  node_public_key key;
};
using replica_entry = std::variant<records_entry, key_entry>;

std::vector<std::byte> encode_records_entry(std::string_view records);
std::vector<std::byte> encode_key_entry(std::uint64_t node, const node_public_key& key);
result<replica_entry> decode_replica_entry(std::span<const std::byte> payload);

class subscription_replica {
 public:
  // Applies one committed entry. A payload that does not decode, or records that do not make sense (a
  // change to an unknown subscription), are an error: every node fails alike on the same bytes, and the
  // records before the bad one stay applied everywhere.
  status apply(std::span<const std::byte> payload);

  // Per-group snapshots (a cluster's raft group snapshot). The part: the subscriptions whose key
  // (root + id) satisfies `in_part` (the caller passes "group_of(key) == g", as subscription_cluster
  // routes a subscription's entries). Node keys are not tied to a subscription: subscription_cluster
  // commits them all in group 0 (publish_key), so that group's snapshot carries them (`with_keys`) and
  // the other groups' do not. Blob, integers little-endian:
  //
  //   8 bytes "weirsubp" | u8 version = 1 | u8 flags (bit 0: node keys follow; other bits 0)
  //   [u32 key count | per key, ascending node id: u64 node | u16 kid length | kid | u16 x length | x]
  //   u64 length | subscription_log records: the part's subscriptions in key order (encode_image)
  //
  // Deterministic: the same state gives the same bytes.
  std::vector<std::byte> snapshot_part(const std::function<bool(std::string_view key)>& in_part,
                                       bool with_keys) const;
  // Replaces the part's subscriptions by the blob's, and every node key if the blob carries keys (else
  // the keys stay). The blob is decoded and checked whole first: a damaged one (store_errc::corrupt),
  // or one holding a subscription outside the part, changes nothing.
  status restore_part(std::span<const std::byte> blob,
                      const std::function<bool(std::string_view key)>& in_part);

  // By key (root + id).
  const std::map<std::string, persisted_subscription>& subscriptions() const { return subs_; }
  const std::map<std::uint64_t, node_public_key>& keys() const { return keys_; }

 private:
  std::map<std::string, persisted_subscription> subs_;
  std::map<std::uint64_t, node_public_key> keys_;
};

}  // namespace weir::subscriptions

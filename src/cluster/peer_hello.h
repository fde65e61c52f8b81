// peer_hello: the first bytes of a peer-link connection (docs/replication-formats.md, "Peer-link hello and
// frames"): the dialer's hello, and the refusal an acceptor may answer it with before it closes the
// connection. Pure functions over bytes (no I/O); peer_links reads and writes them.
//
//   hello (dialer -> acceptor, 40 bytes): "weirpeer" | u32 version (4) | u64 sender id | u32 lanes (bits
//   0-15 the link lane, bits 16-31 the core lane) | u32 the sender's core lane count | u64 the sender's
//   incarnation (its data directory's, cluster_identity) | u32 crc32c(first 36 bytes)
//   refusal (acceptor -> dialer, once, then the acceptor closes): "weirnope" | u32 reason (1: another
//   incarnation) | u64 refusing node | u64 incarnation it remembers | u64 incarnation the hello gave |
//   u16 text length | text (at most max_refusal_text) | u32 crc32c(everything before)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace weir::cluster {

inline constexpr std::uint32_t peer_link_version = 4;
inline constexpr std::size_t peer_hello_size = 40;

struct peer_hello {
  std::uint64_t sender = 0;
  std::uint32_t link_lane = 0;   // 0 bulk, 1 urgent
  std::uint32_t core_lane = 0;   // the sender's core lane these frames belong to
  std::uint32_t core_lanes = 1;  // how many core lanes the sender runs
  std::uint64_t incarnation = 0;
  bool operator==(const peer_hello&) const = default;
};

enum class hello_errc : int {
  bad_magic = 1,  // not a weir peer link
  bad_version,    // another peer-link version
  bad_checksum,
  bad_lane,  // a link lane that does not exist
};

std::array<std::byte, peer_hello_size> encode_hello(const peer_hello& h);
// True once `bytes` (the start of a connection) cannot be a hello of this version: a stranger to the
// protocol, or a node of another version whose hello is shorter, is turned away without waiting for the
// whole hello.
bool hello_rejected_early(std::span<const std::byte> bytes);
// The first peer_hello_size bytes of `bytes` as a hello (bytes.size() >= peer_hello_size).
result<peer_hello> decode_hello(std::span<const std::byte> bytes);

struct peer_refusal {
  enum class reason : std::uint32_t { other_incarnation = 1 };
  reason why = reason::other_incarnation;
  std::uint64_t refused_by = 0;  // the acceptor's node id
  std::uint64_t remembered = 0;  // the incarnation the acceptor last accepted for the sender's id
  std::uint64_t presented = 0;   // the one the hello gave
  std::string text;              // what the acceptor logged, for the refused node's own log
  bool operator==(const peer_refusal&) const = default;
};

inline constexpr std::size_t max_refusal_text = 1024;
inline constexpr std::size_t refusal_fixed_size = 8 + 4 + 8 + 8 + 8 + 2 + 4;

std::vector<std::byte> encode_refusal(const peer_refusal& r);  // text cut at max_refusal_text
// What the acceptor sent so far: a whole refusal (`consumed` set to its size), nullopt while more bytes
// are needed, or an error once the bytes cannot be one.
struct refusal_read {
  std::optional<peer_refusal> refusal;
  std::size_t consumed = 0;
};
result<refusal_read> decode_refusal(std::span<const std::byte> bytes);

}  // namespace weir::cluster

// The wire format of raft messages between nodes (docs/replication-formats.md, "Wire format"). One connection
// per pair of nodes carries the messages of every group, so each frame names its group; the peer is
// known from the connection and is not repeated in the frame.
//
//   frame := u32 body_len | u32 crc32c(body) | body            (little-endian)
//   body  := u32 group | u8 type | fields of the type
//
// A decoded message is a view: its entries, addresses and snapshot data point into the input bytes,
// which must outlive it. Decoding copies nothing but the small vectors of entry and server views.
// Pure functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "raft/byte_codec.h"
#include "raft/types.h"

namespace weir::raft::wire {

inline constexpr std::size_t frame_header_size = 8;
// Larger frames are refused (a corrupt length must not make a reader wait for 4 GiB). A snapshot's
// records travel in snapshot_chunk frames, so this caps only its metadata, references and the records
// it still holds inline (not yet synced to the sender's data log).
inline constexpr std::uint32_t max_frame_body = 64u << 20;
// What a snapshot_chunk's pieces carry at most (a little more with their keys).
inline constexpr std::uint32_t max_chunk_bytes = 1u << 20;

// The codes equal libraft's RAFT_IO_* values (checked in the glue).
enum class message_type : std::uint8_t {
  append_entries = 1,
  append_entries_result = 2,
  request_vote = 3,
  request_vote_result = 4,
  install_snapshot = 5,
  timeout_now = 6,
  // weir's own (no libraft message): a snapshot's data-log records copied ahead of its InstallSnapshot
  // (docs/replication.md, "Snapshots").
  snapshot_chunk = 7,
  snapshot_chunk_ack = 8,
};

struct entry {
  term_id term;
  std::uint8_t type = 0;  // RAFT_COMMAND (1), RAFT_BARRIER (2), RAFT_CHANGE (3)
  std::span<const std::byte> data;
};

struct server {
  node_id id;
  std::uint8_t role = 0;  // RAFT_STANDBY (0), RAFT_VOTER (1), RAFT_SPARE (2)
  std::string_view address;
};

struct append_entries {
  term_id term;
  log_index prev_log_index;
  term_id prev_log_term;
  log_index leader_commit;
  std::vector<entry> entries;
};

struct append_entries_result {
  term_id term;
  log_index rejected;
  log_index last_log_index;
};

struct request_vote {
  term_id term;
  node_id candidate;
  log_index last_log_index;
  term_id last_log_term;
  bool disrupt_leader = false;
  bool pre_vote = false;
};

struct request_vote_result {
  term_id term;
  bool vote_granted = false;
  std::uint8_t pre_vote = 0;  // raft_tribool: unknown (0), true (1), false (2)
};

struct install_snapshot {
  term_id term;
  log_index last_index;
  term_id last_term;
  std::vector<server> conf;
  log_index conf_index;
  // 0: `data` is self-contained. Otherwise the snapshot_chunk frames of this transfer (`chunks` of them,
  // sequence 0..chunks-1) came first and `data` references their records by the sender's places.
  std::uint64_t transfer = 0;
  std::uint32_t chunks = 0;
  std::span<const std::byte> data;
};

// Where a record sits in the sender's data log, and which bytes of it a snapshot references: the key a
// transferred record is known by (streams::disk_location plus the slice's begin and size).
struct record_key {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
  std::uint32_t core = 0;
  std::uint32_t data_offset = 0;
  std::uint32_t begin = 0;
  std::uint32_t size = 0;  // > 0
  friend bool operator==(const record_key&, const record_key&) = default;
  friend auto operator<=>(const record_key&, const record_key&) = default;
};

// Bytes [piece_offset, piece_offset + bytes.size()) of the record `key` (a record larger than a chunk
// spans several pieces, in order).
struct record_piece {
  record_key key;
  std::uint32_t piece_offset = 0;
  std::span<const std::byte> bytes;
};

// One frame of a snapshot transfer: `seq` counts from 0 within the transfer. Every chunk names the
// snapshot it carries (its last index, > 0, and term): a receiver keeps a dropped transfer's records for
// a later transfer of this or a newer snapshot. Chunk 0 opens the transfer and carries no piece (the receiver
// answers how many records it already holds); every later chunk carries at least one.
struct snapshot_chunk {
  std::uint64_t transfer = 0;
  std::uint32_t seq = 0;
  log_index last_index;
  term_id last_term;
  std::vector<record_piece> pieces;
};

// The receiver wrote every piece of chunks 0..seq of the transfer to its data log (flow control: the
// sender keeps a few chunks unacknowledged at most). The answer to chunk 0 (and only it) may name
// `resume` > 0: the receiver holds, written, the first `resume` records of the transfer in the sender's
// order (kept from a dropped transfer of the same snapshot), and the sender starts with the next one;
// and `held`: other records of this sender the receiver holds, written (kept from a dropped or replaced
// transfer of this snapshot or another), which the sender skips wherever they come in its order.
struct snapshot_chunk_ack {
  std::uint64_t transfer = 0;
  std::uint32_t seq = 0;
  std::uint32_t resume = 0;
  std::vector<record_key> held;
};

struct timeout_now {
  term_id term;
  log_index last_log_index;
  term_id last_log_term;
};

// The variant's order is the type code's (index + 1).
using body = std::variant<append_entries, append_entries_result, request_vote, request_vote_result,
                          install_snapshot, timeout_now, snapshot_chunk, snapshot_chunk_ack>;

struct message {
  group_id group;
  body payload;
};

message_type type_of(const body& b);

// Appends one frame holding `m` to `out`.
void encode_frame(const message& m, std::vector<std::byte>& out);

struct decoded_frame {
  std::size_t consumed = 0;  // bytes of `in` this frame took
  message msg;
};

// Decodes the frame at the start of `in`: a frame, nullopt when `in` holds only part of one (read more),
// or errc::malformed (bad length, checksum, type, field or trailing bytes: close the connection).
result<std::optional<decoded_frame>> decode_frame(std::span<const std::byte> in);

// The message fields alone (what the frame's checksum covers), for the fuzzer.
result<message> decode_body(std::span<const std::byte> body);

// Shared with the node log record codec: a configuration as u32 n, then per server
// u64 id | u8 role | u16 address_len | address.
void encode_servers(std::span<const server> servers, byte_writer& w);
bool decode_servers(byte_reader& r, std::vector<server>& out);

}  // namespace weir::raft::wire

// libFuzzer target: what a cluster node decodes from another node besides raft's own frames
// (raft_decoder_fuzz covers those). Every input goes down the two paths such bytes take:
//   - a cluster message (channel 1 of peer_links, replicator::on_message): cluster::decode; for a forward,
//     cluster::decode_entry of its entry, then streams::decode of the entry's command;
//   - a group's log entry as raft applies it (group_glue::apply): cluster::decode_entry of the whole
//     input, then, for an entry of kind streams, streams::decode of its command, and for one of kind
//     membership, cluster::decode_membership_change (canonical); the input alone also goes through
//     cluster::decode_membership and decode_decided (group 0's snapshot part, canonical). (An entry of kind
//     subscriptions is decoded by subscriptions::decode_replica_entry and the journal's record replay,
//     which tests/unit/subscriptions covers; they are not linked here.)
// Invariants:
//   - cluster::decode and decode_entry are canonical: a decoded message (entry) re-encodes to exactly
//     the bytes it came from. A forward's entry, a leader_call's request and a leader_reply's answer are
//     the rest of the message by design (no length of their own), so those are canonical too; they are
//     views of those bytes, never copies. An entry's kind is one weir knows.
//   - streams::decode is not canonical (a varint may carry redundant continuation bytes, a message count
//     is read as a u64 and kept as a u32): its re-encoding decodes, re-encodes to itself, and is never
//     longer than the input (decoding invents nothing); the data_offset the encoder reports points at
//     the payload's bytes.
//   - the peer link's hello and an acceptor's refusal (cluster/peer_hello.h), each also with its CRC
//     set right (random bytes almost never carry a matching CRC32C, and the fields behind it are what
//     matters): a decoded hello or refusal re-encodes to exactly the bytes it came from, a refusal's
//     text is never longer than max_refusal_text, and decode_refusal never consumes more than it got.
// The frame header and its checksum are parsed inside peer_links' connection class, not by a function
// that can be called alone, so they are not covered here.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cluster/membership.h"
#include "cluster/messages.h"
#include "cluster/peer_hello.h"
#include "storage/crc32c.h"
#include "storage/log_format.h"
#include "streams/command_codec.h"

namespace {

using namespace weir;

#define FUZZ_CHECK(cond)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "invariant broken: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

bool inside(std::span<const std::byte> view, std::span<const std::byte> whole) {
  if (view.empty()) return true;
  return view.data() >= whole.data() && view.data() + view.size() <= whole.data() + whole.size();
}

// streams::decode of a command from another node, as src/replica/raft_lane.cc calls it.
void check_command(std::span<const std::byte> bytes) {
  const std::string_view in(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto c = streams::decode(in);
  if (!c) return;
  (void)streams::command_path(*c);
  std::uint32_t data_offset = UINT32_MAX;
  const std::string once = streams::encode(*c, &data_offset);
  FUZZ_CHECK(once.size() <= in.size());
  if (const streams::payload* data = streams::command_data(*c); data != nullptr && !data->empty()) {
    FUZZ_CHECK(data_offset != UINT32_MAX);
    FUZZ_CHECK(data_offset + data->size() <= once.size());
    FUZZ_CHECK(std::string_view(once).substr(data_offset, data->size()) == *data->bytes);
  } else {
    FUZZ_CHECK(data_offset == UINT32_MAX);
  }
  auto again = streams::decode(once);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->index() == c->index());
  FUZZ_CHECK(streams::command_path(*again) == streams::command_path(*c));
  FUZZ_CHECK(streams::encode(*again) == once);
}

// cluster::decode_entry of a log entry: header (origin, ticket, kind) + command.
void check_entry(std::span<const std::byte> entry) {
  auto e = cluster::decode_entry(entry);
  const bool known_kind =
      entry.size() >= cluster::entry_header_size &&
      (entry[16] == std::byte{static_cast<std::uint8_t>(cluster::entry_kind::streams)} ||
       entry[16] == std::byte{static_cast<std::uint8_t>(cluster::entry_kind::subscriptions)} ||
       entry[16] == std::byte{static_cast<std::uint8_t>(cluster::entry_kind::membership)} ||
       entry[16] == std::byte{static_cast<std::uint8_t>(cluster::entry_kind::cold_index)});
  FUZZ_CHECK(e.has_value() == known_kind);
  if (!e) return;
  const auto& [header, command] = *e;
  FUZZ_CHECK(inside(command, entry));
  FUZZ_CHECK(command.size() == entry.size() - cluster::entry_header_size);
  FUZZ_CHECK(same_bytes(cluster::encode_entry(header, command), entry));
  if (header.kind == cluster::entry_kind::streams) check_command(command);
  if (header.kind == cluster::entry_kind::membership) {
    if (auto c = cluster::decode_membership_change(command)) {
      FUZZ_CHECK(same_bytes(cluster::encode_membership_change(*c), command));
      FUZZ_CHECK(c->id != 0 && (c->what == cluster::membership_change::op::add) == !c->address.empty());
    }
  }
}

// Group 0's snapshot part: the committed membership, and with it the departures (decode_decided, strict:
// ids increasing from 1, a count only when there are departures).
void check_membership(std::span<const std::byte> in) {
  if (auto m = cluster::decode_membership(in)) FUZZ_CHECK(same_bytes(cluster::encode_membership(*m), in));
  if (auto d = cluster::decode_decided(in)) {
    FUZZ_CHECK(same_bytes(cluster::encode_decided(*d), in));
    FUZZ_CHECK(d->departed.size() <= cluster::max_departures);
    for (const auto& [id, dep] : d->departed) FUZZ_CHECK(id != 0);
  }
}

// cluster::decode of a channel 1 message.
void check_message(std::span<const std::byte> in) {
  auto m = cluster::decode(in);
  if (!m) return;
  FUZZ_CHECK(same_bytes(cluster::encode(*m), in));
  if (const auto* f = std::get_if<cluster::forward>(&*m)) {
    FUZZ_CHECK(inside(f->entry, in));
    FUZZ_CHECK(f->entry.size() >= cluster::entry_header_size);
    check_entry(f->entry);
  } else if (const auto* r = std::get_if<cluster::forward_reject>(&*m)) {
    FUZZ_CHECK(r->reason == cluster::reject_reason::not_leader || r->reason == cluster::reject_reason::lost);
  } else if (const auto* c = std::get_if<cluster::leader_call>(&*m)) {
    FUZZ_CHECK(inside(c->request, in));
  } else if (const auto* q = std::get_if<cluster::leader_reply>(&*m)) {
    FUZZ_CHECK(inside(q->answer, in));
    FUZZ_CHECK(q->served || q->answer.empty());
  } else if (const auto* u = std::get_if<cluster::membership_update>(&*m)) {
    // Node ids from 1, addresses never empty (what a node's replicator then checks further).
    for (const auto& [id, address] : u->members) FUZZ_CHECK(id != 0 && !address.empty());
  }
}

void check_hello(std::span<const std::byte> in) {
  if (in.size() < cluster::peer_hello_size) {
    (void)cluster::hello_rejected_early(in);
    return;
  }
  std::vector<std::byte> fixed(in.begin(), in.begin() + cluster::peer_hello_size);
  constexpr std::size_t crc_at = cluster::peer_hello_size - 4;
  storage::format::put_u32(fixed.data() + crc_at, storage::crc32c(std::span(fixed).first(crc_at)));
  for (std::span<const std::byte> bytes : {in, std::span<const std::byte>(fixed)}) {
    auto h = cluster::decode_hello(bytes);
    if (!h) continue;
    const auto again = cluster::encode_hello(*h);
    if (std::memcmp(again.data(), bytes.data(), again.size()) != 0) {
      std::fprintf(stderr, "a decoded hello re-encodes to other bytes\n");
      std::abort();
    }
  }
}

void check_refusal(std::span<const std::byte> in) {
  std::vector<std::byte> fixed(in.begin(), in.end());
  constexpr std::size_t text_at = cluster::refusal_fixed_size - 4;  // after the u16 text length
  if (fixed.size() >= text_at) {
    const std::size_t text =
        static_cast<std::size_t>(fixed[text_at - 2]) | static_cast<std::size_t>(fixed[text_at - 1]) << 8;
    if (text_at + text + 4 <= fixed.size()) {
      storage::format::put_u32(fixed.data() + text_at + text,
                               storage::crc32c(std::span(fixed).first(text_at + text)));
    }
  }
  for (std::span<const std::byte> bytes : {in, std::span<const std::byte>(fixed)}) {
    auto r = cluster::decode_refusal(bytes);
    if (!r || !r->refusal) continue;
    if (r->consumed > bytes.size() || r->refusal->text.size() > cluster::max_refusal_text) {
      std::fprintf(stderr, "a refusal consumed %zu of %zu bytes, text of %zu\n", r->consumed, bytes.size(),
                   r->refusal->text.size());
      std::abort();
    }
    const std::vector<std::byte> again = cluster::encode_refusal(*r->refusal);
    if (again.size() != r->consumed || std::memcmp(again.data(), bytes.data(), again.size()) != 0) {
      std::fprintf(stderr, "a decoded refusal re-encodes to other bytes\n");
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // libFuzzer's buffer is exactly `size` bytes on the heap, so a read past its end is caught by ASan.
  const auto in = std::as_bytes(std::span<const std::uint8_t>(data, size));
  check_message(in);
  check_entry(in);
  check_membership(in);
  check_hello(in);
  check_refusal(in);
  return 0;
}

// libFuzzer target: the decoders of bytes that come from another node or from the disk in the raft
// module: wire::decode_frame / decode_body (peer messages) and record::decode_record / decode_body (node
// log records), on arbitrary bytes. Invariants:
//   - consumed <= size, and every view a decoded message holds lies inside the consumed bytes;
//   - the encoding is canonical: re-encoding a decoded frame or record gives back exactly the bytes it
//     was decoded from (so no field is lost, widened or defaulted on the way);
//   - every strict prefix of a decoded frame or record asks for more bytes (no early success);
//   - the input decoded as a stream of frames (and of records) ends in "need more", an error, or
//     exactly at its end.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "raft/log_record.h"
#include "raft/wire_format.h"

namespace {

using namespace weir::raft;

#define FUZZ_CHECK(cond)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "invariant broken: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

bool inside(std::span<const std::byte> view, std::span<const std::byte> whole) {
  if (view.empty()) return true;
  return view.data() >= whole.data() && view.data() + view.size() <= whole.data() + whole.size();
}

void check_views(const wire::message& m, std::span<const std::byte> whole) {
  if (const auto* ae = std::get_if<wire::append_entries>(&m.payload)) {
    for (const auto& e : ae->entries) FUZZ_CHECK(inside(e.data, whole));
  } else if (const auto* is = std::get_if<wire::install_snapshot>(&m.payload)) {
    FUZZ_CHECK(inside(is->data, whole));
    for (const auto& s : is->conf) FUZZ_CHECK(inside(std::as_bytes(std::span(s.address)), whole));
  } else if (const auto* c = std::get_if<wire::snapshot_chunk>(&m.payload)) {
    // Every chunk names its snapshot; chunk 0 opens the transfer and only it carries no piece.
    FUZZ_CHECK(c->transfer != 0 && c->last_index.value() != 0);
    FUZZ_CHECK((c->seq == 0) == c->pieces.empty());
    for (const auto& p : c->pieces) {
      FUZZ_CHECK(inside(p.bytes, whole));
      FUZZ_CHECK(!p.bytes.empty() && p.piece_offset + p.bytes.size() <= p.key.size);
    }
  } else if (const auto* a = std::get_if<wire::snapshot_chunk_ack>(&m.payload)) {
    // Only the answer to the opening chunk says where to resume and what is held; a record held is
    // somewhere and not empty.
    FUZZ_CHECK((a->resume == 0 && a->held.empty()) || a->seq == 0);
    for (const auto& k : a->held) FUZZ_CHECK(k.segment != 0 && k.size != 0);
  }
}

void check_views(const record::snapshot& s, std::span<const std::byte> whole) {
  FUZZ_CHECK(inside(s.data, whole));
  for (const auto& x : s.conf) FUZZ_CHECK(inside(std::as_bytes(std::span(x.address)), whole));
}

void check_views(const record::log_record& r, std::span<const std::byte> whole) {
  if (const auto* e = std::get_if<record::entries>(&r.payload)) {
    for (const auto& x : e->items) FUZZ_CHECK(inside(x.data, whole));
  } else if (const auto* c = std::get_if<record::carry>(&r.payload)) {
    for (const auto& x : c->items) FUZZ_CHECK(inside(x.data, whole));
  } else if (const auto* s = std::get_if<record::snapshot>(&r.payload)) {
    check_views(*s, whole);
  } else if (const auto* st = std::get_if<record::state>(&r.payload); st != nullptr && st->snap) {
    check_views(*st->snap, whole);
  }
}

template <class Decode, class Encode>
void check_stream(std::span<const std::byte> in, Decode decode, Encode encode) {
  std::span<const std::byte> rest = in;
  for (int n = 0; n < 64 && !rest.empty(); ++n) {
    // An exact-size copy, so that a read past the end is caught by ASan.
    std::vector<std::byte> buf(rest.begin(), rest.end());
    auto d = decode(std::span<const std::byte>(buf));
    if (!d.has_value() || !d->has_value()) return;
    const auto& got = **d;
    FUZZ_CHECK(got.consumed > 0 && got.consumed <= buf.size());
    const auto whole = std::span<const std::byte>(buf).first(got.consumed);
    check_views(got.payload(), whole);
    std::vector<std::byte> again;
    encode(got.payload(), again);
    FUZZ_CHECK(again.size() == got.consumed);
    FUZZ_CHECK(std::memcmp(again.data(), buf.data(), again.size()) == 0);
    // Strict prefixes (a few of them: the shortest, the longest, one in the middle) need more.
    for (std::size_t len : {std::size_t{0}, got.consumed / 2, got.consumed - 1}) {
      std::vector<std::byte> prefix(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(len));
      auto p = decode(std::span<const std::byte>(prefix));
      FUZZ_CHECK(p.has_value() && !p->has_value());
    }
    rest = rest.subspan(got.consumed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = std::as_bytes(std::span<const std::uint8_t>(data, size));

  // Peer frames.
  check_stream(
      in,
      [](std::span<const std::byte> b) {
        auto d = wire::decode_frame(b);
        struct out {
          std::size_t consumed;
          wire::message msg;
          const wire::message& payload() const { return msg; }
        };
        using R = weir::result<std::optional<out>>;
        if (!d) return R(d.err());
        if (!d->has_value()) return R(std::optional<out>());
        return R(std::optional<out>(out{(*d)->consumed, std::move((*d)->msg)}));
      },
      [](const wire::message& m, std::vector<std::byte>& o) { wire::encode_frame(m, o); });

  // Node log records.
  check_stream(
      in,
      [](std::span<const std::byte> b) {
        auto d = record::decode_record(b);
        struct out {
          std::size_t consumed;
          record::log_record rec;
          const record::log_record& payload() const { return rec; }
        };
        using R = weir::result<std::optional<out>>;
        if (!d) return R(d.err());
        if (!d->has_value()) return R(std::optional<out>());
        return R(std::optional<out>(out{(*d)->consumed, std::move((*d)->rec)}));
      },
      [](const record::log_record& r, std::vector<std::byte>& o) { record::encode_record(r, o); });

  // Bodies without a frame (what the checksum covers): a decoded body re-encodes to the same bytes.
  std::vector<std::byte> exact(in.begin(), in.end());
  if (auto m = wire::decode_body(exact)) {
    check_views(*m, exact);
    std::vector<std::byte> again;
    wire::encode_frame(*m, again);
    FUZZ_CHECK(again.size() == exact.size() + wire::frame_header_size);
    FUZZ_CHECK(std::memcmp(again.data() + wire::frame_header_size, exact.data(), exact.size()) == 0);
  }
  if (auto r = record::decode_body(exact)) {
    check_views(*r, exact);
    std::vector<std::byte> again;
    record::encode_record(*r, again);
    FUZZ_CHECK(again.size() == exact.size() + record::record_header_size);
    FUZZ_CHECK(std::memcmp(again.data() + record::record_header_size, exact.data(), exact.size()) == 0);
  }
  return 0;
}

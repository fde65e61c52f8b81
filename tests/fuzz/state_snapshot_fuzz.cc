// libFuzzer target: the stream state machine's checkpoint decoders (state_machine::restore,
// restore_part, snapshot_part_references, relocate_snapshot_part; docs/log-format.md "Checkpoint blob of
// a stream state machine").
// Any input must be rejected or accepted without a crash; an accepted blob must write out again and
// restore to the same bytes; a rejected part blob must leave the machine exactly as it was.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "streams/state_machine.h"

namespace {

using namespace weir::streams;

bool in_a(std::string_view p) {
  return p.starts_with("/a/");
}

// A machine with a source in part A, its fork outside it, and a stream of each part; the source holds
// its reference by origin (a cluster's retain), and part B a tombstone.
void prepare(state_machine& sm) {
  create_command c;
  c.path = "/a/src";
  c.content_type = "text/plain";
  c.initial.bytes = make_chunk("abcdef");
  c.now_ms = 1;
  sm.set_entry_place(0, 1);
  (void)sm.create(c);
  fork_retain_command r;
  r.source = "/a/src";
  r.offset = stream_offset(4);
  r.now_ms = 1;
  r.fork = "/b/fork";
  sm.set_entry_place(0, 7);
  outcome o = sm.fork_retain(r);  // a cluster's fork: part blobs (version 6) carry its origin
  create_command f;
  f.path = "/b/fork";
  f.now_ms = 1;
  f.fork = fork_spec{};
  f.fork->source = "/a/src";
  f.fork->offset = r.offset;
  if (o.resolution) f.fork->resolved = *o.resolution;
  f.fork->resolved.retained = true;
  sm.set_entry_place(1, 1);
  (void)sm.create(f);
  sm.set_entry_place(1, 2);
  (void)sm.fork_tombstone(fork_tombstone_command{"/b/gone", fork_origin{0, 5}, 1, 1});
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> blob(reinterpret_cast<const std::byte*>(data), size);

  state_machine whole;
  if (whole.restore(blob)) {
    const auto again = whole.snapshot();
    state_machine copy;
    check(copy.restore(std::span<const std::byte>(again)).has_value());
    check(copy.snapshot() == again);
  }

  state_machine part;
  prepare(part);
  const auto before = part.snapshot();
  // The whole-machine blob keeps references as counts and no tombstones: a part of everything has them.
  auto everything = [](std::string_view) { return true; };
  auto any = [](const disk_location&) { return true; };
  const auto before_parts = part.snapshot_part(everything, any);
  std::vector<std::string> removed;
  if (part.restore_part(blob, in_a, &removed)) {
    auto out = part.snapshot_part(in_a, [](const disk_location&) { return true; });
    check(out.has_value());
    state_machine copy;
    check(copy.restore_part(std::span<const std::byte>(*out), in_a).has_value());
    for (const auto& l : part.forks()) (void)part.read(l.path, std::nullopt, 1 << 16);
  } else {
    check(part.snapshot() == before);
    check(part.snapshot_part(everything, any).value() == before_parts.value());
  }

  // What a snapshot transfer's receiver decodes (replica/snapshot_transfer): a peer's part blob, whose
  // references it lists and rewrites to its own copies. Rewritten to the same places, a decodable blob
  // lists the same references and comes out the same when rewritten again.
  auto refs = snapshot_part_references(blob);
  auto same = [](const part_reference& r) -> std::optional<part_reference> { return r; };
  auto moved = relocate_snapshot_part(blob, same);
  check(refs.has_value() == moved.has_value());
  if (moved) {
    auto listed = snapshot_part_references(std::span<const std::byte>(*moved));
    check(listed.has_value() && *listed == *refs);
    auto again = relocate_snapshot_part(std::span<const std::byte>(*moved), same);
    check(again.has_value() && *again == *moved);
  }
  return 0;
}

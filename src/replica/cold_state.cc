#include "replica/cold_state.h"

#include <cstring>
#include <string_view>

#include "storage/types.h"

namespace weir::replica {

namespace {

constexpr std::string_view container_magic = "weircold";
constexpr std::uint64_t container_version = 1;

error bad_checkpoint(const std::string& why) {
  return make_error(storage::errc::corruption, "checkpoint: " + why);
}

void put_var(std::vector<std::byte>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::byte>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::byte>(v));
}

// Reads a varint at `pos`; false at the end of the input or past 64 bits.
bool get_var(std::span<const std::byte> in, std::size_t& pos, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    const auto b = static_cast<std::uint8_t>(in[pos++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace

result<tier::cold_apply_result> apply_index_record(tier::cold_index& index, const streams::state_machine& sm,
                                                   std::span<const std::byte> record) {
  auto u = tier::decode_index_record(record);
  if (!u) return u.err();
  auto span_of = [&sm](std::string_view stream) -> std::optional<tier::cold_index::stream_span> {
    auto log = sm.log_of(std::string(stream));
    if (!log) return std::nullopt;
    return tier::cold_index::stream_span{log->base(), log->tail()};
  };
  return index.apply(*u, span_of);
}

void follow_command(tier::cold_index& index, const streams::state_machine& sm, const streams::command& c,
                    const streams::outcome& o) {
  if (index.streams() == 0) return;
  if (o.created) (void)index.drop_stream(streams::command_path(c));
  for (const std::string& path : o.removed) {
    if (!sm.log_of(path)) (void)index.drop_stream(path);
  }
}

std::vector<std::byte> encode_checkpoint(std::vector<std::byte> sm_snapshot, const tier::cold_index& index) {
  if (index.streams() == 0 && index.objects() == 0) return sm_snapshot;
  const std::vector<std::byte> cold = index.encode();
  std::vector<std::byte> out;
  out.reserve(container_magic.size() + 20 + sm_snapshot.size() + cold.size());
  for (char ch : container_magic) out.push_back(static_cast<std::byte>(ch));
  put_var(out, container_version);
  put_var(out, sm_snapshot.size());
  out.insert(out.end(), sm_snapshot.begin(), sm_snapshot.end());
  out.insert(out.end(), cold.begin(), cold.end());
  return out;
}

result<checkpoint_parts> decode_checkpoint(std::span<const std::byte> blob) {
  if (blob.size() < container_magic.size() ||
      std::memcmp(blob.data(), container_magic.data(), container_magic.size()) != 0) {
    return checkpoint_parts{blob, {}};  // the state machine's snapshot alone
  }
  std::size_t pos = container_magic.size();
  std::uint64_t version = 0, sm_size = 0;
  if (!get_var(blob, pos, version)) return bad_checkpoint("truncated container header");
  if (version != container_version) {
    return bad_checkpoint("container version " + std::to_string(version) + " is newer than this weir reads");
  }
  if (!get_var(blob, pos, sm_size) || sm_size > blob.size() - pos) {
    return bad_checkpoint("the state's length runs past the checkpoint");
  }
  return checkpoint_parts{blob.subspan(pos, sm_size), blob.subspan(pos + sm_size)};
}

status restore_checkpoint(std::span<const std::byte> blob, streams::state_machine& sm,
                          tier::cold_index& index) {
  auto parts = decode_checkpoint(blob);
  if (!parts) return parts.err();
  if (status st = sm.restore(parts->sm); !st) return st;
  if (parts->index.empty()) {
    index = tier::cold_index{};
    return {};
  }
  auto decoded = tier::cold_index::decode(parts->index);
  if (!decoded) return bad_checkpoint("the cold index does not load: " + decoded.err().reason);
  index = std::move(*decoded);
  return {};
}

}  // namespace weir::replica

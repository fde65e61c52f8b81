#include "replica/cold_state.h"

#include <cstring>
#include <string_view>

#include "storage/types.h"
#include "streams/wire.h"

namespace weir::replica {

namespace {

constexpr std::string_view container_magic = "weircold";
constexpr std::uint64_t container_version = 1;

error bad_checkpoint(const std::string& why) {
  return make_error(storage::errc::corruption, "checkpoint: " + why);
}

}  // namespace

result<tier::cold_apply_result> apply_index_record(tier::cold_index& index, const streams::state_machine& sm,
                                                   std::span<const std::byte> record,
                                                   std::vector<std::string>* touched) {
  auto u = tier::decode_index_record(record);
  if (!u) return u.err();
  if (touched) {
    for (const auto& r : u->ranges) touched->push_back(r.stream);
  }
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

std::vector<std::byte> checkpoint_index(const tier::cold_index& index) {
  if (index.streams() == 0 && index.objects() == 0) return {};
  return index.encode();
}

std::vector<std::byte> encode_checkpoint(std::vector<std::byte> sm_snapshot, const tier::cold_index& index) {
  return encode_checkpoint(std::move(sm_snapshot), checkpoint_index(index));
}

std::vector<std::byte> encode_checkpoint(std::vector<std::byte> sm_snapshot,
                                         std::span<const std::byte> cold) {
  if (cold.empty()) return sm_snapshot;
  streams::wire::writer head;
  head.raw(container_magic);
  head.var(container_version);
  head.var(sm_snapshot.size());
  const std::string h = head.take();
  std::vector<std::byte> out;
  out.reserve(h.size() + sm_snapshot.size() + cold.size());
  for (char ch : h) out.push_back(static_cast<std::byte>(ch));
  out.insert(out.end(), sm_snapshot.begin(), sm_snapshot.end());
  out.insert(out.end(), cold.begin(), cold.end());
  return out;
}

result<checkpoint_parts> decode_checkpoint(std::span<const std::byte> blob) {
  if (blob.size() < container_magic.size() ||
      std::memcmp(blob.data(), container_magic.data(), container_magic.size()) != 0) {
    return checkpoint_parts{blob, {}};  // the state machine's snapshot alone
  }
  streams::wire::reader in(std::string_view(reinterpret_cast<const char*>(blob.data()), blob.size()));
  in.expect(container_magic);
  const std::uint64_t version = in.var();
  if (!in.ok()) return bad_checkpoint("truncated container header");
  if (version != container_version) {
    return bad_checkpoint("container version " + std::to_string(version) + " is newer than this weir reads");
  }
  const std::uint64_t sm_size = in.var();
  if (!in.ok() || sm_size > in.remaining())
    return bad_checkpoint("the state's length runs past the checkpoint");
  const std::size_t pos = blob.size() - in.remaining();
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

// state_machine::restore_part: swaps one part of the machine (a cluster's raft group) for a decoded
// version-4 blob (state_snapshot.cc decodes it), keeping forks linked and fork references sound across
// parts. The rules are in state_machine.h, above restore_part.

#include "streams/command_codec.h"
#include "streams/state_machine.h"

namespace weir::streams {

bool state_machine::link_if_acyclic(stream_state& fork, const std::shared_ptr<memory_log>& source) {
  // A damaged history could name a fork's own descendant as its source: reads would walk the loop forever.
  for (const memory_log* l = source.get(); l; l = l->source().get()) {
    if (l == fork.log.get()) return false;
  }
  fork.log->link_source(source);
  return true;
}

status state_machine::restore_part(std::span<const std::byte> blob, const path_predicate& in_part,
                                   std::vector<std::string>* removed) {
  auto decoded = decode_part(blob, &in_part);
  if (!decoded) return decoded.err();
  part_content& fresh = *decoded;
  // Generations are unique per machine (a cluster derives them from the group and raft index).
  for (const auto& [path, s] : fresh.streams) {
    auto it = by_generation_.find(s.meta.generation);
    if (it != by_generation_.end() && !in_part(it->second->meta.path)) {
      return make_error(codec_errc::bad_value, "snapshot: generation " + std::to_string(s.meta.generation) +
                                                   " of " + path + " belongs to " + it->second->meta.path +
                                                   ", outside the part");
    }
  }
  // Nothing fails from here on.

  // Take the part's streams out (node handles: the entries do not move).
  string_map<stream_state> old;
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (in_part(it->first)) {
      expiring_.erase(it->first);
      by_generation_.erase(it->second.meta.generation);
      old.insert(streams_.extract(it++));
    } else {
      ++it;
    }
  }
  for (auto it = hold_ends_.begin(); it != hold_ends_.end();) {
    it = in_part(it->second) ? hold_ends_.erase(it) : std::next(it);
  }
  std::erase_if(held_until_, [&](const auto& h) { return in_part(h.first); });
  std::erase_if(tombstones_, [&](const auto& t) { return in_part(t.second.fork); });
  tombstones_.merge(fresh.tombstones);

  // The same incarnation keeps its log object (forks anywhere point at it); the rest of the old part
  // ceases to exist. A fork that vanished releases nothing here: its release is an entry of its
  // source's group (stream_shard::propose_release), which that group's log or snapshot brings.
  for (auto& [path, was] : old) {
    auto now = fresh.streams.find(path);
    const bool same = now != fresh.streams.end() && now->second.meta.generation == was.meta.generation &&
                      now->second.log->base() == was.log->base();
    if (same) {
      was.log->take_records(*now->second.log);
      now->second.log = was.log;
      if (removed && now->second.soft_deleted && !was.soft_deleted) removed->push_back(path);
      continue;
    }
    ++removals_;
    if (removed && !was.soft_deleted) removed->push_back(path);
  }

  for (auto& [path, s] : fresh.streams) {
    auto [it, inserted] = streams_.emplace(path, std::move(s));
    WEIR_ASSERT(inserted, "restored stream {} is outside its part", path);
    by_generation_[it->second.meta.generation] = &it->second;
    if (!it->second.meta.expiry.none()) expiring_.insert(path);
  }
  for (auto& [path, until] : fresh.held) {
    hold_ends_.emplace(until, path);
    held_until_.emplace(path, until);
  }

  // Links. A source's references are the blob's as is: retains and releases are both entries of the
  // source's group, so its references at the snapshot's index are exact (forks of other groups on this node
  // may be ahead or behind it; they do not change it).
  for (auto& [path, s] : streams_) {
    if (!s.fork) continue;
    if (s.fork->resolved.point.value() == 0 || s.log->source() || !(in_part(s.fork->source) || in_part(path)))
      continue;
    auto src = streams_.find(s.fork->source);
    if (src != streams_.end()) (void)link_if_acyclic(s, src->second.log);
  }
  return {};
}

}  // namespace weir::streams

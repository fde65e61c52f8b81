#include "auth/token_cache.h"

#include <iterator>

namespace weir::auth {

const token_cache::entry* token_cache::find(const digest& token_hash, std::int64_t now_s,
                                            std::int64_t leeway_s, std::uint64_t key_generation) {
  auto it = map_.find(token_hash);
  if (it == map_.end()) return nullptr;
  if (it->second.key_generation != key_generation || now_s > it->second.exp + leeway_s) {
    map_.erase(it);
    return nullptr;
  }
  return &it->second;
}

void token_cache::insert(const digest& token_hash, entry e, std::int64_t now_s, std::int64_t leeway_s) {
  if (map_.size() >= capacity_) {
    // Full: drop what has expired; if that frees nothing, start over (the next requests re-verify).
    for (auto it = map_.begin(); it != map_.end();) {
      it = now_s > it->second.exp + leeway_s ? map_.erase(it) : std::next(it);
    }
    if (map_.size() >= capacity_) map_.clear();
  }
  map_.insert_or_assign(token_hash, std::move(e));
}

}  // namespace weir::auth

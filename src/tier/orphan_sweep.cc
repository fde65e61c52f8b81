#include "tier/orphan_sweep.h"

namespace weir::tier {
namespace {

// Rule 3 of the header: no record for this upload can still be applied.
bool settled(const object_name& n, const sweep_state& s) {
  if (n.term < s.term) return s.term_settled;
  if (n.term == s.term) return n.seq < s.settled_seq;
  return false;  // a later term than ours: another leader's, still at work
}

}  // namespace

void orphan_sweep::begin_pass() {
  ++pass_;
}

std::vector<std::string> orphan_sweep::consider(const list_page& page, const sweep_state& s) {
  std::vector<std::string> remove;
  for (const object_info& o : page.objects) {
    const auto name = parse_object_key(o.key);
    if (!name || name->epoch != s.epoch || name->group != s.group) continue;  // rule 1
    const bool orphan = !s.indexed(o.key) && !s.in_snapshot(o.key) && settled(*name, s);
    if (!orphan) {
      first_seen_.erase(o.key);  // named again (a snapshot, or a record applied late): start over
      continue;
    }
    auto [it, added] = first_seen_.try_emplace(o.key, seen{s.now_ms, pass_});
    it->second.pass = pass_;
    if (!added && s.now_ms - it->second.first_ms >= s.grace_ms) {
      remove.push_back(o.key);
      first_seen_.erase(it);
    }
  }
  return remove;
}

void orphan_sweep::end_pass() {
  std::erase_if(first_seen_, [this](const auto& kv) { return kv.second.pass != pass_; });
}

}  // namespace weir::tier

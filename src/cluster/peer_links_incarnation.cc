// peer_links: incarnations (peer_links.h, "Incarnations"): the acceptor's judgement of a known peer's
// hello against the incarnation book, the dialer's reading of a refusal, and forgetting a member that left.
// On the owning loop, like the rest of peer_links.
#include <algorithm>

#include "base/log.h"
#include "cluster/peer_links.h"
#include "cluster/peer_links_state.h"

namespace weir::cluster {
namespace {
// A peer refused for its incarnation is logged at most this often.
constexpr std::int64_t refusal_log_every_ms = 10'000;
}  // namespace

peer_links::hello_judgement peer_links::judge_incarnation(std::uint64_t id, std::uint64_t incarnation,
                                                          const std::string& remote, peer_refusal& out) {
  auto v = opts_.book->judge(id, incarnation);
  if (!v) {
    warn_limited(
        fmt::format("peer_links: node {}: closing the connection from node {} ({}): cannot record its "
                    "incarnation: {}",
                    opts_.self, id, remote, v.err().reason));
    return hello_judgement::refuse;
  }
  if (*v == incarnation_book::verdict::recorded) {
    log::info("peer_links: node {}: node {} ({}) has incarnation {}; remembered", opts_.self, id, remote,
              incarnation);
  }
  if (*v != incarnation_book::verdict::other) return hello_judgement::accept;
  const std::uint64_t remembered = opts_.book->find(id).value_or(0);
  out = peer_refusal{
      .why = peer_refusal::reason::other_incarnation,
      .refused_by = opts_.self,
      .remembered = remembered,
      .presented = incarnation,
      .text = fmt::format(
          "node {} came back with a different data directory (incarnation {}; node {} last accepted "
          "incarnation {} under that id): raft counts on every node keeping what it acknowledged and the "
          "votes it cast, so it takes part in nothing. A node that lost its data directory must be removed "
          "and added again: DELETE /cluster/members?id={} on a member, then start it on an empty directory "
          "with --join and add it (POST /cluster/members)",
          id, incarnation, opts_.self, remembered, id)};
  if (peer* p = find_peer(id);
      p != nullptr && loop_.now_ms() - p->refusal_logged_ms >= refusal_log_every_ms) {
    p->refusal_logged_ms = loop_.now_ms();
    log::error("peer_links: node {}: refusing the connection from {}: {}", opts_.self, remote, out.text);
  }
  return hello_judgement::refuse_and_tell;
}

bool peer_links::read_refusal(out_link& l, const char* bytes, std::size_t n) {
  if (l.not_refusal) return false;
  const auto* b = reinterpret_cast<const std::byte*>(bytes);
  l.answer.insert(l.answer.end(), b,
                  b + std::min(n, refusal_fixed_size + max_refusal_text - l.answer.size()));
  auto r = decode_refusal(l.answer);
  if (!r || (!r->refusal && l.answer.size() >= refusal_fixed_size + max_refusal_text)) {
    l.not_refusal = true;  // not what a version-4 acceptor writes: ignored, as before
    l.answer.clear();
    return false;
  }
  if (!r->refusal) return false;
  const peer_refusal refusal = std::move(*r->refusal);
  l.answer.clear();
  const peer& p = *l.owner;
  log::error("peer_links: node {}: node {} ({}:{}) refuses this node's links: {}", opts_.self, p.id,
             p.addr.host, p.addr.port, refusal.text);
  lose(l, "refused", 0);
  if (on_refusal_) on_refusal_(refusal);
  return true;
}

void peer_links::forget_incarnation(std::uint64_t id) {
  if (!opts_.book || !opts_.book->find(id)) return;
  if (auto st = opts_.book->forget(id); !st) {
    log::error("peer_links: node {}: node {} left the cluster, but its incarnation stays remembered: {}",
               opts_.self, id, st.err().reason);
    return;
  }
  log::info("peer_links: node {}: node {} left the cluster: its incarnation is forgotten", opts_.self, id);
}

}  // namespace weir::cluster

// node_io's outbox: the frames of every group for a peer, packed into that peer's packets for the end of
// the loop turn (turn_end sends them): held while a term or vote they may depend on is not durable,
// small ones on the urgent lane unless their group has a bulk frame still ahead of them, large ones in
// packets of their own so that their bytes are not copied again.
#include <algorithm>

#include "raft/node_io.h"
#include "raft/node_io_group.h"

namespace weir::raft {

void node_io::queue_frame(group& g, node_id to, std::vector<std::byte> frame, bool small) {
  ++stats_.frames_sent;
  if (!g.held.empty() || g.fence > log_.synced_batch()) {
    // A term or vote of this group is not durable yet: the message may depend on it.
    ++stats_.frames_held;
    g.held.push_back(group::held_frame{g.fence, to, std::move(frame), small});
    return;
  }
  add_to_outbox(to, std::move(frame), &g, small);
}

namespace {

// Appends `frame` to the last of `packets`, or starts a packet (see node_io::max_packet_bytes). A large
// frame (node_io::own_packet_bytes: entries of a large append) is a packet of its own and no frame is
// added to it, so that its bytes are not copied again (into a packet, or by a packet's regrowth).
void add_to_packets(std::vector<std::vector<std::byte>>& packets, std::vector<std::byte>&& frame,
                    std::size_t max_bytes) {
  if (!packets.empty() && frame.size() < node_io::own_packet_bytes &&
      packets.back().size() < node_io::own_packet_bytes &&
      packets.back().size() + frame.size() <= max_bytes) {
    packets.back().insert(packets.back().end(), frame.begin(), frame.end());
    return;
  }
  packets.push_back(std::move(frame));  // starts a packet: not copied again
}

}  // namespace

bool node_io::bulk_pending(const group& g, node_id to) const {
  auto it =
      std::find_if(g.bulk_upto.begin(), g.bulk_upto.end(), [&](const auto& e) { return e.first == to; });
  if (it == g.bulk_upto.end()) return false;
  auto sent = bulk_sent_.find(to);
  const std::uint64_t handed = sent == bulk_sent_.end() ? 0 : sent->second;
  // The transport's bulk lane is in order: of the `handed` packets, all but the last bulk_queued() left.
  return it->second > handed - std::min<std::uint64_t>(handed, transport_.bulk_queued(to));
}

void node_io::add_to_outbox(node_id to, std::vector<std::byte>&& frame, group* g, bool small) {
  lanes& out = outbox_[to];
  if (small && g != nullptr && !bulk_pending(*g, to)) {
    add_to_packets(out.urgent, std::move(frame), max_packet_bytes);
    return;
  }
  add_to_packets(out.bulk, std::move(frame), max_packet_bytes);
  if (g == nullptr) return;
  // The number the transport's bulk lane will know this packet by (turn_end sends them in order).
  auto sent = bulk_sent_.find(to);
  const std::uint64_t number = (sent == bulk_sent_.end() ? 0 : sent->second) + out.bulk.size();
  auto it =
      std::find_if(g->bulk_upto.begin(), g->bulk_upto.end(), [&](const auto& e) { return e.first == to; });
  if (it == g->bulk_upto.end()) {
    g->bulk_upto.emplace_back(to, number);
  } else {
    it->second = number;
  }
}

}  // namespace weir::raft

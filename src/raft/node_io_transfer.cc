// node_io's side of chunked snapshot transfers (docs/replication.md, "Snapshots"): the frames it hands
// to the transfer handler, the chunks and installs the handler sends, and the install it delivers to
// libraft once the records are local.
#include <fmt/format.h>

#include "base/assert.h"
#include "base/log.h"
#include "raft/byte_codec.h"
#include "raft/node_io.h"
#include "raft/node_io_group.h"

namespace weir::raft {

using group = node_io::group;

// Frames of snapshot transfers (weir's own types, and an InstallSnapshot naming a transfer) go to the
// handler; true when the frame was one of them (handled or dropped).
bool node_io::handle_transfer_frame(node_id from, const wire::message& msg) {
  const auto* install = std::get_if<wire::install_snapshot>(&msg.payload);
  const bool transfer_frame = std::holds_alternative<wire::snapshot_chunk>(msg.payload) ||
                              std::holds_alternative<wire::snapshot_chunk_ack>(msg.payload) ||
                              (install != nullptr && install->transfer != 0);
  if (!transfer_frame) return false;
  if (transfers_ == nullptr) {
    ++stats_.transfer_frames_dropped;
    ++stats_.frames_dropped;
    return true;
  }
  if (const auto* c = std::get_if<wire::snapshot_chunk>(&msg.payload)) {
    transfers_->on_chunk(from, msg.group, *c);
  } else if (const auto* a = std::get_if<wire::snapshot_chunk_ack>(&msg.payload)) {
    transfers_->on_chunk_ack(from, msg.group, *a);
  } else {
    snapshot_install s;
    s.group = msg.group;
    s.peer = from;
    s.term = install->term;
    s.last_index = install->last_index;
    s.last_term = install->last_term;
    s.conf_index = install->conf_index;
    byte_writer cw(s.conf);
    wire::encode_servers(install->conf, cw);
    s.transfer = install->transfer;
    s.chunks = install->chunks;
    s.data.assign(install->data.begin(), install->data.end());
    transfers_->on_install(std::move(s));
  }
  return true;
}

void node_io::send_chunk(node_id to, group_id g, wire::snapshot_chunk c) {
  send_chunk_frame(to, wire::message{g, std::move(c)});
}

void node_io::send_chunk_ack(node_id to, group_id g, wire::snapshot_chunk_ack a) {
  send_chunk_frame(to, wire::message{g, a});
}

void node_io::send_chunk_frame(node_id to, const wire::message& m) {
  std::vector<std::byte> frame;
  wire::encode_frame(m, frame);
  ++stats_.frames_sent;
  add_to_outbox(to, std::move(frame), nullptr, false);  // bulk, and no raft message waits for it
  schedule_turn_end();
}

bool node_io::send_install(const snapshot_install& s) {
  auto it = groups_.find(s.group);
  if (it == groups_.end() || !it->second->started || it->second->closed) return false;
  if (s.data.size() + s.conf.size() > wire::max_frame_body - 4096) {
    // The records went in chunks: what is left is metadata, references and the records not yet synced
    // to the sender's data log (about a second of the group's appends).
    log::error("raft node {}: group {}: snapshot {} of {} bytes is too large to send to node {}",
               opts_.self.value(), s.group.value(), s.last_index.value(), s.data.size(), s.peer.value());
    ++stats_.snapshots_unsent;
    return false;
  }
  std::vector<wire::server> servers;
  byte_reader cr(s.conf);
  WEIR_ASSERT(wire::decode_servers(cr, servers), "group {}: bad configuration in a snapshot install",
              s.group.value());
  wire::message w{s.group, wire::install_snapshot{s.term, s.last_index, s.last_term, std::move(servers),
                                                  s.conf_index, s.transfer, s.chunks, s.data}};
  std::vector<std::byte> frame;
  wire::encode_frame(w, frame);
  ++stats_.snapshots_sent;
  queue_frame(*it->second, s.peer, std::move(frame), false);
  schedule_turn_end();
  return true;
}

bool node_io::deliver_install(const snapshot_install& s) {
  auto it = groups_.find(s.group);
  auto addr = opts_.addresses.find(s.peer);
  if (it == groups_.end() || !it->second->started || it->second->closed || addr == opts_.addresses.end())
    return false;
  std::vector<wire::server> servers;
  byte_reader cr(s.conf);
  if (!wire::decode_servers(cr, servers)) return false;
  const wire::install_snapshot p{s.term, s.last_index, s.last_term, std::move(servers), s.conf_index, 0,
                                 0,      s.data};
  group& g = *it->second;
  raft_message m{};
  m.type = RAFT_IO_INSTALL_SNAPSHOT;
  m.server_id = s.peer.value();
  m.server_address = addr->second.c_str();
  if (!fill_install(m.install_snapshot, p)) return false;
  g.recv(&g.io, &m);
  return true;
}

}  // namespace weir::raft

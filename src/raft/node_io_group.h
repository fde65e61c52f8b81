// node_io's private parts, shared by node_io.cc and node_io_transfer.cc: one group's I/O state and the
// conversions from wire messages to libraft's. Internal to src/raft.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "raft/libraft.h"
#include "raft/node_io.h"
#include "raft/wire_format.h"

namespace weir::raft {

struct node_io::group {
  node_io* owner = nullptr;
  group_id id;
  ::raft_io io{};
  std::optional<group_state> recovered;  // until load()
  std::optional<stored_snapshot> snapshot;
  log_index next_index{1};
  bool started = false;
  bool closed = false;
  raft_io_tick_cb tick = nullptr;
  raft_io_recv_cb recv = nullptr;
  // Batch holding the group's latest term or vote record: its messages wait until it is durable.
  std::uint64_t fence = 0;
  // While libraft handles an AppendEntries of this group: prev_log_index + n_entries of it (see
  // clamp_append_result).
  std::optional<std::uint64_t> answering_up_to;
  // The group's current term, and the index of the first entry this node appended in it (0: none yet):
  // see clamp_old_term_result.
  std::uint64_t term = 0;
  std::uint64_t first_of_term = 0;
  // When (executor ms) a message of this group last came from each peer (node_io::heard_from).
  std::vector<std::pair<node_id, std::int64_t>> heard;
  // Per peer, the number (node_io::bulk_sent_'s count) of the last bulk packet that holds a frame of
  // this group: until the transport has let it go, the group's small messages stay in the bulk lane.
  std::vector<std::pair<node_id, std::uint64_t>> bulk_upto;
  // Per peer, the last index it acknowledged (an AppendEntries result that accepted) in a term: a
  // heartbeat past it takes the bulk lane (node_io.h, "Lanes").
  struct acknowledged {
    node_id from;
    std::uint64_t term = 0;
    std::uint64_t index = 0;
  };
  std::vector<acknowledged> acked;
  // Notes what an AppendEntries result of `from` acknowledged (a rejection: nothing).
  void note_acknowledged(node_id from, const raft_append_entries_result& r) {
    if (r.rejected != 0) return;
    auto it = std::find_if(acked.begin(), acked.end(), [&](const auto& a) { return a.from == from; });
    if (it == acked.end()) {
      acked.push_back(acknowledged{from, r.term, r.last_log_index});
    } else if (it->term != r.term) {
      *it = acknowledged{from, r.term, r.last_log_index};
    } else {
      it->index = std::max<std::uint64_t>(it->index, r.last_log_index);
    }
  }
  // The last index `to` acknowledged in `in_term` (0: nothing known).
  std::uint64_t acknowledged_by(node_id to, std::uint64_t in_term) const {
    for (const auto& a : acked)
      if (a.from == to) return a.term == in_term ? a.index : 0;
    return 0;
  }
  // The last AppendEntries that came (node_io::note_append_from): its sender, term and libraft time.
  node_id append_from;
  std::uint64_t append_term = 0;
  std::int64_t append_ms = -1;

  struct held_frame {
    std::uint64_t fence;
    node_id to;
    std::vector<std::byte> frame;
    bool small = false;  // may take the urgent lane
  };
  struct pending_append {
    std::uint64_t batch;
    raft_io_append* req;
    raft_io_append_cb cb;
  };
  struct pending_put {
    std::uint64_t batch;
    raft_io_snapshot_put* req;
    raft_io_snapshot_put_cb cb;
    raft_buffer* install_bufs;  // an installed snapshot's buffer array (see fail_group)
  };
  struct done_send {
    raft_io_send* req;
    raft_io_send_cb cb;
  };
  struct pending_get {
    raft_io_snapshot_get* req;
    raft_io_snapshot_get_cb cb;
  };
  struct pending_work {
    raft_io_async_work* req;
    raft_io_async_work_cb cb;
  };
  std::deque<held_frame> held;
  std::deque<pending_append> appends;
  std::deque<pending_put> puts;
  std::vector<done_send> sends;
  std::vector<pending_get> gets;
  std::vector<pending_work> works;
};

// Fills `c` (initialised) from wire servers; 0 or a RAFT_* code.
inline int fill_configuration(raft_configuration& c, std::span<const wire::server> servers) {
  for (const wire::server& s : servers) {
    const std::string addr(s.address);
    if (int rv = raft_configuration_add(&c, s.id.value(), addr.c_str(), s.role); rv != 0) return rv;
  }
  return 0;
}

// libraft's InstallSnapshot from a decoded one (raft_malloc'd data: libraft owns it from recv on); false
// when an allocation failed (nothing left allocated).
inline bool fill_install(raft_install_snapshot& a, const wire::install_snapshot& p) {
  a.term = p.term.value();
  a.last_index = p.last_index.value();
  a.last_term = p.last_term.value();
  a.conf_index = p.conf_index.value();
  raft_configuration_init(&a.conf);
  a.data.len = p.data.size();
  a.data.base = raft_malloc(std::max<std::size_t>(p.data.size(), 1));
  if (fill_configuration(a.conf, p.conf) != 0 || a.data.base == nullptr) {
    raft_configuration_close(&a.conf);
    raft_free(a.data.base);
    return false;
  }
  if (!p.data.empty()) std::memcpy(a.data.base, p.data.data(), p.data.size());
  return true;
}

}  // namespace weir::raft

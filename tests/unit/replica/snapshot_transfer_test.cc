// snapshot_transfers: a snapshot's referenced records go to a peer in chunks (bounded by a window of
// unacknowledged chunks), the peer writes them to its data log, relocates the snapshot to its copies and
// hands it to libraft once they are durable; reordered, incomplete, replaced and missing-record transfers
// are dropped on both sides, duplicates ignored; a transfer cut or stalled keeps what the receiver wrote
// and the next transfer of the same snapshot resumes after it (a partial record sent again whole), until
// the kept progress expires or another snapshot replaces it. Two transfer objects (sender and receiver)
// over fakes: frames go through the real wire codec, "data logs" are maps, time is a sim_scheduler's.
#include "replica/snapshot_transfer.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "replica/group_snapshot.h"
#include "streams/state_machine.h"
#include "support/sim/sim_scheduler.h"
#include "unit/streams/command_builders.h"

namespace weir::replica {
namespace {

using raft::group_id;
using raft::node_id;
using streams::disk_location;
using streams::part_reference;
using streams::testing::make_append;
using streams::testing::make_create;

std::string pattern(std::size_t n, int salt) {
  std::string s(n, ' ');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(salt)) % 26);
  return s;
}

bool any_path(std::string_view) {
  return true;
}

// One node's end: its transfers object and the fakes behind its ports.
struct fake_node {
  raft::sim_executor ex;
  node_id id;
  // Its data log: records by (segment, offset); the bytes start at data_offset.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> disk;
  std::uint64_t next_offset = 0;
  std::set<std::uint64_t> pinned;  // pin ids with pins
  std::vector<std::pair<disk_location, std::function<void()>>> sync_waiters;
  bool auto_sync = true;
  std::vector<snapshot_transfers::install> delivered;
  std::vector<snapshot_transfers::install> installs_sent;  // what send_install got
  std::vector<std::vector<std::byte>> frames_out;          // encoded frames, in order
  std::size_t reads = 0;
  std::unique_ptr<snapshot_transfers> t;

  fake_node(raft::sim_scheduler& sched, std::uint64_t self, snapshot_transfers::options o)
      : ex(sched), id(self) {
    snapshot_transfers::ports p;
    p.send_chunk = [this](node_id, group_id g, raft::wire::snapshot_chunk c) { encode(g, std::move(c)); };
    p.send_ack = [this](node_id, group_id g, raft::wire::snapshot_chunk_ack a) { encode(g, a); };
    p.send_install = [this](const snapshot_transfers::install& i) {
      installs_sent.push_back(i);
      encode(i.group, raft::wire::install_snapshot{
                          i.term, i.last_index, i.last_term, {}, i.conf_index, i.transfer, i.chunks, i.data});
      return true;
    };
    p.deliver = [this](const snapshot_transfers::install& i) {
      delivered.push_back(i);
      return true;
    };
    p.read = [this](std::vector<snapshot_transfers::piece_read> pieces, snapshot_transfers::read_done done) {
      ++reads;
      std::vector<std::string> out;
      for (const auto& r : pieces) {
        const std::string& rec = disk.at({r.key.segment, r.key.offset});
        out.push_back(rec.substr(r.key.data_offset + r.key.begin + r.offset, r.length));
      }
      ex.post([done = std::move(done), out = std::move(out)]() mutable { done(std::move(out)); });
    };
    p.write = [this](std::uint64_t transfer, std::string bytes,
                     std::function<void(result<disk_location>)> done) {
      disk_location at{9, next_offset, 0, 3};
      next_offset += bytes.size() + 16;
      disk[{at.segment, at.offset}] = "hdr" + bytes;
      pinned.insert(transfer);
      ex.post([done = std::move(done), at] { done(at); });
    };
    p.unpin = [this](std::uint64_t transfer) { pinned.erase(transfer); };
    p.when_durable = [this](const disk_location& at, std::function<void()> fn) {
      if (auto_sync) return ex.post(std::move(fn));
      sync_waiters.emplace_back(at, std::move(fn));
    };
    p.state_offset = [](std::span<const std::byte> data) -> std::optional<std::size_t> {
      if (data.size() < 8) return std::nullopt;
      return 8;
    };
    t = std::make_unique<snapshot_transfers>(ex, std::move(p), o);
  }

  template <class M>
  void encode(group_id g, M m) {
    std::vector<std::byte> frame;
    raft::wire::encode_frame(raft::wire::message{g, std::move(m)}, frame);
    frames_out.push_back(std::move(frame));
  }

  // Hands one encoded frame from `from` to this node's transfers, as node_io does.
  void receive(node_id from, const std::vector<std::byte>& frame) {
    auto d = raft::wire::decode_frame(frame);
    ASSERT_TRUE(d && d->has_value());
    const raft::wire::message& m = (*d)->msg;
    if (const auto* c = std::get_if<raft::wire::snapshot_chunk>(&m.payload)) {
      t->on_chunk(from, m.group, *c);
    } else if (const auto* a = std::get_if<raft::wire::snapshot_chunk_ack>(&m.payload)) {
      t->on_chunk_ack(from, m.group, *a);
    } else {
      const auto& is = std::get<raft::wire::install_snapshot>(m.payload);
      ASSERT_NE(is.transfer, 0u);
      snapshot_transfers::install s;
      s.group = m.group;
      s.peer = from;
      s.term = is.term;
      s.last_index = is.last_index;
      s.last_term = is.last_term;
      s.conf_index = is.conf_index;
      s.transfer = is.transfer;
      s.chunks = is.chunks;
      s.data.assign(is.data.begin(), is.data.end());
      t->on_install(std::move(s));
    }
  }
};

raft::wire::message_type type_of_frame(const std::vector<std::byte>& frame) {
  auto d = raft::wire::decode_frame(frame);
  EXPECT_TRUE(d && d->has_value());
  return raft::wire::type_of((*d)->msg.payload);
}

struct snapshot_transfer_test : ::testing::Test {
  raft::sim_scheduler sched{7};
  snapshot_transfers::options opts;
  std::unique_ptr<fake_node> a, b;  // a sends, b receives
  streams::state_machine sm;        // a's state
  std::vector<std::string> bodies;  // each record's bytes, in order
  std::size_t max_unacked = 0;      // chunks a sent that b had not acknowledged, at most

  void SetUp() override {
    opts.chunk_bytes = 1000;
    opts.window = 2;
    open_nodes();
  }

  void open_nodes() {
    a = std::make_unique<fake_node>(sched, 1, opts);
    snapshot_transfers::options bo = opts;
    bo.first_id = 1000;
    b = std::make_unique<fake_node>(sched, 2, bo);
  }

  // a's state: stream /s with `n` records of `size` bytes in a's data log (segment 3 on), and one more
  // record held inline (not synced there yet).
  void fill(int n, std::size_t size) {
    ASSERT_EQ(sm.create(make_create("/s", "text/plain")).code, streams::errc::ok);
    std::uint64_t end = 0;
    for (int i = 0; i < n; ++i) {
      bodies.push_back(pattern(size, i));
      ASSERT_EQ(sm.apply(make_append("/s", bodies.back())).code, streams::errc::ok);
      end += size;
      const disk_location at{3 + std::uint64_t(i) / 4, 100 * (std::uint64_t(i) % 4), 0, 11};
      a->disk[{at.segment, at.offset}] = std::string(11, '#') + bodies.back();
      ASSERT_TRUE(sm.locate(1, end, at));
      sm.evict(1, end);
    }
    bodies.push_back("inline tail");
    ASSERT_EQ(sm.apply(make_append("/s", bodies.back())).code, streams::errc::ok);
  }

  // `n` more records of `size` bytes appended to stream `path` of a's state (created if need be), in a's
  // data log from segment `segment` on.
  void add_records(const std::string& path, int n, std::size_t size, std::uint64_t segment) {
    if (!sm.position_of(path, 0).exists) {
      ASSERT_EQ(sm.create(make_create(path, "text/plain")).code, streams::errc::ok);
    }
    for (int i = 0; i < n; ++i) {
      const std::string body = pattern(size, 100 + i);
      const auto r = sm.apply(make_append(path, body));
      ASSERT_EQ(r.code, streams::errc::ok);
      ASSERT_TRUE(r.meta.has_value());
      if (path == "/s") bodies.push_back(body);
      const disk_location at{segment + std::uint64_t(i), 0, 0, 11};
      a->disk[{at.segment, at.offset}] = std::string(11, '#') + body;
      ASSERT_TRUE(sm.locate(r.meta->generation, r.meta->tail.value(), at));
      sm.evict(r.meta->generation, r.meta->tail.value());
    }
  }

  snapshot_transfers::install install_of(std::uint64_t index) {
    auto part = sm.snapshot_part(any_path, [](const disk_location& at) { return at.known(); });
    EXPECT_TRUE(part.has_value());
    snapshot_transfers::install s;
    s.group = group_id(5);
    s.peer = b->id;
    s.term = raft::term_id(3);
    s.last_index = raft::log_index(index);
    s.last_term = raft::term_id(3);
    s.conf_index = raft::log_index(1);
    s.data.assign(8, std::byte{0});
    s.data[0] = std::byte(index);
    const auto state = encode_group_snapshot(*part, {});
    s.data.insert(s.data.end(), state.begin(), state.end());
    return s;
  }

  // Runs what is due now (posted completions); timers wait for the clock.
  void settle() { sched.run_until(sched.now_ms()); }

  // Moves frames both ways and runs tasks until nothing is left; `filter` may drop or reorder a's frames.
  void run(const std::function<bool(std::vector<std::vector<std::byte>>&)>& filter = {}) {
    std::size_t acks_seen = 0;
    std::size_t chunks_seen = 0;
    for (int rounds = 0; rounds < 10'000; ++rounds) {
      settle();
      if (a->frames_out.empty() && b->frames_out.empty()) return;
      auto from_a = std::move(a->frames_out);
      a->frames_out.clear();
      if (filter && !filter(from_a)) from_a.clear();  // lost
      for (const auto& f : from_a) {
        if (type_of_frame(f) == raft::wire::message_type::snapshot_chunk) ++chunks_seen;
        max_unacked = std::max(max_unacked, chunks_seen - acks_seen);
        b->receive(a->id, f);
      }
      auto from_b = std::move(b->frames_out);
      b->frames_out.clear();
      for (const auto& f : from_b) {
        auto d = raft::wire::decode_frame(f);
        acks_seen = std::get<raft::wire::snapshot_chunk_ack>((*d)->msg.payload).seq + 1;
        a->receive(b->id, f);
      }
    }
    FAIL() << "the transfer never settled";
  }

  // The bytes of stream /s as b would read them after restoring what it was handed.
  std::string read_on_b(const snapshot_transfers::install& s) {
    auto parts = decode_group_snapshot(std::span<const std::byte>(s.data).subspan(8));
    EXPECT_TRUE(parts.has_value());
    streams::state_machine y;
    EXPECT_TRUE(y.restore_part(parts->streams, any_path).has_value());
    std::string out;
    for (const auto& slice : y.read("/s", std::nullopt, 1 << 30).plan.slices) {
      if (!slice.cold()) {
        out += slice.view();
        continue;
      }
      const std::string& rec = b->disk.at({slice.at.segment, slice.at.offset});
      out += rec.substr(slice.at.data_offset + slice.begin, slice.size);
    }
    return out;
  }

  // A link that carries a's frames until `n` chunks with records went through, then nothing more (nor
  // the install): a cut link.
  static std::function<bool(std::vector<std::vector<std::byte>>&)> cut_after(std::uint32_t n) {
    auto passed = std::make_shared<std::uint32_t>(0);
    return [passed, n](std::vector<std::vector<std::byte>>& frames) {
      std::vector<std::vector<std::byte>> through;
      for (auto& f : frames) {
        if (*passed >= n) break;
        auto d = raft::wire::decode_frame(f);
        const auto* c = std::get_if<raft::wire::snapshot_chunk>(&(*d)->msg.payload);
        if (c != nullptr && c->seq > 0) ++*passed;
        through.push_back(std::move(f));
      }
      frames = std::move(through);
      return true;
    };
  }

  // Both ends give up on a transfer that stopped moving.
  void stall() { sched.run_until(sched.now_ms() + opts.stall_ms + 1500); }

  // The records a snapshot references, in its order (what a transfer of it sends, in that order).
  static std::vector<raft::wire::record_key> keys_of(const snapshot_transfers::install& s) {
    auto refs = streams::snapshot_part_references(
        decode_group_snapshot(std::span<const std::byte>(s.data).subspan(8))->streams);
    EXPECT_TRUE(refs.has_value());
    std::vector<raft::wire::record_key> out;
    for (const auto& r : *refs)
      out.push_back(
          raft::wire::record_key{r.at.segment, r.at.offset, r.at.core, r.at.data_offset, r.begin, r.size});
    return out;
  }

  // The first piece of the first chunk with records a sends while `run` moves frames (a filter).
  struct first_piece_seen {
    std::optional<raft::wire::record_key> key;
    std::uint32_t offset = 0;
    std::size_t size = 0;
    bool operator()(std::vector<std::vector<std::byte>>& frames) {
      for (const auto& f : frames) {
        auto d = raft::wire::decode_frame(f);
        const auto* c = std::get_if<raft::wire::snapshot_chunk>(&(*d)->msg.payload);
        if (key || c == nullptr || c->pieces.empty()) continue;
        key = c->pieces[0].key;
        offset = c->pieces[0].piece_offset;
        size = c->pieces[0].bytes.size();
      }
      return true;
    }
  };

  std::string all_bodies() const {
    std::string out;
    for (const auto& s : bodies) out += s;
    return out;
  }
};

TEST_F(snapshot_transfer_test, records_cross_in_chunks_and_the_receiver_reads_its_own_copies) {
  fill(10, 2500);  // 25,000 bytes in records larger than a chunk: 3 pieces each
  a->t->send(install_of(40));
  run();
  ASSERT_EQ(b->delivered.size(), 1u);
  const auto& got = b->delivered[0];
  EXPECT_EQ(got.transfer, 0u);
  EXPECT_EQ(got.last_index, raft::log_index(40));
  EXPECT_EQ(got.peer, a->id);
  EXPECT_EQ(read_on_b(got), all_bodies());
  // Every reference now names b's copies.
  auto parts = decode_group_snapshot(std::span<const std::byte>(got.data).subspan(8));
  auto refs = streams::snapshot_part_references(parts->streams);
  ASSERT_TRUE(refs.has_value());
  ASSERT_EQ(refs->size(), 10u);
  for (const auto& r : *refs) EXPECT_EQ(r.at.segment, 9u);
  // The install a sent still references a's places (the stored form) and names its 25 chunks.
  ASSERT_EQ(a->installs_sent.size(), 1u);
  EXPECT_EQ(a->installs_sent[0].chunks, 26u);  // the opening chunk 0, then 25 with records
  EXPECT_EQ(a->t->stats().chunks_sent, 25u);
  EXPECT_EQ(a->t->stats().bytes_sent, 25'000u);
  EXPECT_EQ(b->t->stats().chunks_received, 25u);
  EXPECT_EQ(b->t->stats().bytes_received, 25'000u);
  EXPECT_EQ(a->t->stats().transfers_sent, 1u);
  EXPECT_EQ(b->t->stats().transfers_completed, 1u);
  EXPECT_EQ(a->t->sending(), 0u);
  // Flow control: never more than the window unacknowledged, nor read ahead.
  EXPECT_LE(max_unacked, opts.window);
  EXPECT_GE(max_unacked, 1u);
  // Pinned until the group restored the snapshot.
  EXPECT_EQ(b->pinned.size(), 1u);
  b->t->restored(group_id(5));
  EXPECT_TRUE(b->pinned.empty());
  EXPECT_EQ(b->t->receiving(), 0u);
}

TEST_F(snapshot_transfer_test, the_install_waits_until_the_copies_are_durable) {
  b->auto_sync = false;
  fill(3, 500);
  a->t->send(install_of(9));
  run();
  EXPECT_TRUE(b->delivered.empty());
  ASSERT_EQ(b->sync_waiters.size(), 1u);
  b->sync_waiters[0].second();  // the data log's sync covered them
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
}

TEST_F(snapshot_transfer_test, a_snapshot_without_references_goes_as_it_is) {
  ASSERT_EQ(sm.create(make_create("/s", "text/plain", "all in memory")).code, streams::errc::ok);
  const auto s = install_of(4);
  a->t->send(s);
  ASSERT_EQ(a->installs_sent.size(), 1u);
  EXPECT_EQ(a->installs_sent[0].transfer, 0u);
  EXPECT_EQ(a->installs_sent[0].data, s.data);
  EXPECT_EQ(a->t->sending(), 0u);
  EXPECT_EQ(a->reads, 0u);
}

TEST_F(snapshot_transfer_test, a_duplicate_chunk_is_ignored) {
  fill(4, 1500);
  a->t->send(install_of(12));
  bool duplicated = false;
  run([&](std::vector<std::vector<std::byte>>& frames) {
    if (!duplicated && !frames.empty() &&
        type_of_frame(frames[0]) == raft::wire::message_type::snapshot_chunk) {
      frames.push_back(frames[0]);
      duplicated = true;
    }
    return true;
  });
  EXPECT_TRUE(duplicated);
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
  EXPECT_EQ(b->t->stats().transfers_dropped, 0u);
}

TEST_F(snapshot_transfer_test, a_reordered_transfer_is_dropped_on_both_sides_and_the_next_one_works) {
  fill(6, 1500);
  opts.stall_ms = 5000;
  open_nodes();
  for (int i = 0; i < 6; ++i) {
    const disk_location at{3 + std::uint64_t(i) / 4, 100 * (std::uint64_t(i) % 4), 0, 11};
    a->disk[{at.segment, at.offset}] = std::string(11, '#') + bodies[std::size_t(i)];
  }
  a->t->send(install_of(20));
  bool swapped = false;
  run([&](std::vector<std::vector<std::byte>>& frames) {
    if (!swapped && frames.size() >= 2) {
      std::swap(frames[0], frames[1]);
      swapped = true;
    }
    return true;
  });
  ASSERT_TRUE(swapped);
  EXPECT_TRUE(b->delivered.empty());
  EXPECT_EQ(b->t->stats().transfers_dropped, 1u);
  EXPECT_TRUE(b->pinned.empty());  // what it had written is no longer pinned
  // The sender gets no more acknowledgements: it drops its end after stall_ms.
  EXPECT_EQ(a->t->sending(), 1u);
  sched.run_until(sched.now_ms() + 6000);
  EXPECT_EQ(a->t->sending(), 0u);
  EXPECT_EQ(a->t->stats().transfers_dropped, 1u);
  // libraft sends again: a new transfer goes through.
  a->t->send(install_of(20));
  run();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
}

TEST_F(snapshot_transfer_test, a_second_install_replaces_the_transfer_in_progress_and_skips_what_arrived) {
  fill(8, 1500);
  a->t->send(install_of(30));
  // Let a few chunks of the first transfer reach b, then libraft sends again (a newer snapshot).
  int rounds = 0;
  run([&](std::vector<std::vector<std::byte>>&) { return ++rounds < 3; });
  EXPECT_TRUE(b->delivered.empty());
  EXPECT_EQ(b->t->receiving(), 1u);
  const std::size_t written = b->disk.size();
  ASSERT_GT(written, 0u);
  a->t->send(install_of(31));
  EXPECT_EQ(a->t->stats().transfers_replaced, 1u);
  run();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(b->delivered[0].last_index, raft::log_index(31));
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
  EXPECT_EQ(b->t->stats().transfers_replaced, 1u);
  // The records the first transfer wrote serve the second: the same bytes at the same places of a.
  EXPECT_EQ(b->t->stats().transfers_resumed, 1u);
  EXPECT_EQ(a->t->stats().bytes_skipped, written * 1500);
  EXPECT_EQ(b->disk.size(), 8u);  // no record written twice
  EXPECT_EQ(b->pinned.size(), 1u);
  b->t->restored(group_id(5));
  EXPECT_TRUE(b->pinned.empty());
}

TEST_F(snapshot_transfer_test, the_same_snapshot_sent_again_continues_the_transfer_in_progress) {
  fill(8, 1500);
  a->t->send(install_of(30));
  int rounds = 0;
  run([&](std::vector<std::vector<std::byte>>&) { return ++rounds < 3 || rounds > 3; });  // one round lost
  // One round of a's frames was lost: no more acknowledgements, the window is full.
  EXPECT_TRUE(b->delivered.empty());
  const std::uint64_t sent = a->t->stats().chunks_sent;
  a->t->send(install_of(30));  // libraft's install timeout: the same snapshot
  EXPECT_EQ(a->t->stats().transfers_continued, 1u);
  EXPECT_EQ(a->t->stats().transfers_replaced, 0u);
  EXPECT_EQ(a->t->stats().chunks_sent, sent);  // nothing started over
  // Once stalled, the same snapshot starts a new transfer, which b takes in place of the broken one.
  sched.run_until(sched.now_ms() + opts.stall_ms + 1000);
  EXPECT_EQ(a->t->sending(), 0u);
  a->t->send(install_of(30));
  run();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
}

TEST_F(snapshot_transfer_test, a_transfer_cut_after_some_chunks_resumes_there_the_next_time) {
  fill(12, 1000);  // one record per chunk
  const auto s = install_of(40);
  a->t->send(s);
  run(cut_after(5));  // the link breaks after 5 chunks of records
  EXPECT_TRUE(b->delivered.empty());
  EXPECT_EQ(b->disk.size(), 5u);
  stall();
  EXPECT_EQ(a->t->sending(), 0u);
  EXPECT_EQ(b->t->receiving(), 0u);
  EXPECT_EQ(b->t->kept(), 1u);  // what b wrote stays, pinned
  EXPECT_EQ(b->pinned.size(), 1u);
  EXPECT_EQ(b->t->stats().transfers_kept, 1u);
  const std::uint64_t sent_before = a->t->stats().bytes_sent;
  const std::uint64_t chunks_before = a->t->stats().chunks_sent;
  // libraft sends the same snapshot again (its install timeout): the new transfer starts at record 5.
  a->t->send(install_of(40));
  first_piece_seen first;
  run(std::ref(first));
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
  ASSERT_TRUE(first.key.has_value());
  EXPECT_EQ(*first.key, keys_of(s)[5]);
  EXPECT_EQ(a->t->stats().transfers_resumed, 1u);
  EXPECT_EQ(b->t->stats().transfers_resumed, 1u);
  EXPECT_EQ(a->t->stats().bytes_skipped, 5000u);
  EXPECT_EQ(a->t->stats().bytes_sent - sent_before, 7000u);  // only what b lacked
  EXPECT_EQ(a->t->stats().chunks_sent - chunks_before, 7u);
  EXPECT_EQ(a->installs_sent.back().chunks, 8u);  // the opening and 7
  EXPECT_EQ(b->disk.size(), 12u);                 // no record written twice
  EXPECT_EQ(b->t->kept(), 0u);
  // The resumed copies are the delivered transfer's: pinned until the restore, as the others.
  EXPECT_EQ(b->pinned.size(), 1u);
  b->t->restored(group_id(5));
  EXPECT_TRUE(b->pinned.empty());
}

TEST_F(snapshot_transfer_test, a_record_cut_in_the_middle_is_sent_again_whole) {
  fill(4, 2500);  // 3 pieces each: chunk 3 ends record 0 and starts record 1, chunk 4 goes on with it
  const auto s = install_of(20);
  a->t->send(s);
  run(cut_after(4));
  EXPECT_EQ(b->disk.size(), 1u);  // record 0 whole, record 1 only in part
  stall();
  EXPECT_EQ(b->t->kept(), 1u);
  a->t->send(install_of(20));
  first_piece_seen first;
  run(std::ref(first));
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
  // Record 1 again from its first byte: nothing of the cut transfer's part of it is used.
  ASSERT_TRUE(first.key.has_value());
  EXPECT_EQ(*first.key, keys_of(s)[1]);
  EXPECT_EQ(first.offset, 0u);
  EXPECT_EQ(first.size, 1000u);
  EXPECT_EQ(a->t->stats().bytes_skipped, 2500u);
  EXPECT_EQ(b->disk.size(), 4u);
}

TEST_F(snapshot_transfer_test, a_lost_install_resumes_after_every_record_and_still_waits_for_the_sync) {
  b->auto_sync = false;
  fill(4, 1000);
  a->t->send(install_of(20));
  run(cut_after(4));  // every chunk arrives, the install is lost
  EXPECT_EQ(a->t->sending(), 0u);
  EXPECT_EQ(b->disk.size(), 4u);
  EXPECT_TRUE(b->sync_waiters.empty());
  // libraft sends again before b gave up on the transfer: the new one takes over its records.
  a->t->send(install_of(20));
  run();
  EXPECT_EQ(a->t->stats().bytes_skipped, 4000u);
  EXPECT_EQ(a->installs_sent.back().chunks, 1u);  // the opening only
  // The copies of the earlier transfer must be durable before libraft gets the snapshot.
  EXPECT_TRUE(b->delivered.empty());
  ASSERT_EQ(b->sync_waiters.size(), 1u);
  EXPECT_EQ(b->sync_waiters[0].first.offset, b->disk.rbegin()->first.second);  // the last copy written
  b->sync_waiters[0].second();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
}

TEST_F(snapshot_transfer_test, kept_progress_expires_and_its_pins_go) {
  fill(6, 1000);
  a->t->send(install_of(30));
  run(cut_after(3));
  stall();
  EXPECT_EQ(b->t->kept(), 1u);
  EXPECT_EQ(b->pinned.size(), 1u);
  sched.run_until(sched.now_ms() + opts.keep_ms);
  EXPECT_EQ(b->t->kept(), 0u);
  EXPECT_TRUE(b->pinned.empty());
  // The next transfer starts over.
  a->t->send(install_of(30));
  run();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
  EXPECT_EQ(a->t->stats().transfers_resumed, 0u);
  EXPECT_EQ(a->t->stats().bytes_skipped, 0u);
  EXPECT_EQ(b->disk.size(), 9u);
}

TEST_F(snapshot_transfer_test, kept_progress_is_bounded_in_bytes) {
  opts.keep_bytes = 2500;
  open_nodes();
  fill(6, 1000);
  a->t->send(install_of(30));
  run(cut_after(3));
  stall();  // 3000 bytes written: more than may be kept
  EXPECT_EQ(b->t->stats().transfers_kept, 1u);
  EXPECT_EQ(b->t->kept(), 0u);
  EXPECT_TRUE(b->pinned.empty());
}

TEST_F(snapshot_transfer_test,
       a_newer_snapshot_from_the_same_sender_skips_the_kept_records_wherever_they_come) {
  fill(6, 1000);
  const auto first = install_of(30);
  a->t->send(first);
  run(cut_after(3));
  stall();
  ASSERT_EQ(b->t->kept(), 1u);
  ASSERT_EQ(b->disk.size(), 3u);
  // Writes went on meanwhile: a stream ordered before /s got records, so /s's come later in the newer
  // snapshot's order, and /s got one more.
  add_records("/r", 2, 800, 60);
  add_records("/s", 1, 1000, 70);
  const auto newer = install_of(31);
  ASSERT_EQ(keys_of(newer).size(), 9u);
  EXPECT_EQ(keys_of(newer)[2], keys_of(first)[0]);
  a->t->send(newer);
  run();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(b->delivered[0].last_index, raft::log_index(31));
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
  EXPECT_EQ(b->t->stats().transfers_resumed, 1u);
  EXPECT_EQ(a->t->stats().transfers_resumed, 1u);
  EXPECT_EQ(a->t->stats().bytes_skipped, 3000u);  // /s's first three records, not at the front
  EXPECT_EQ(b->disk.size(), 3u + 6u);             // each record written once
  EXPECT_EQ(b->t->kept(), 0u);
  b->t->restored(group_id(5));
  EXPECT_TRUE(b->pinned.empty());
}

TEST_F(snapshot_transfer_test, another_snapshot_discards_progress_over_the_byte_bound) {
  opts.keep_bytes = 2500;
  open_nodes();
  fill(8, 1000);
  a->t->send(install_of(30));
  int rounds = 0;
  run([&](std::vector<std::vector<std::byte>>&) { return ++rounds < 5; });
  ASSERT_GT(b->disk.size(), 2u);  // more written than may be kept
  ASSERT_EQ(b->pinned.size(), 1u);
  const std::uint64_t first_pins = *b->pinned.begin();
  a->t->send(install_of(31));
  run();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
  EXPECT_EQ(b->t->stats().transfers_resumed, 0u);
  EXPECT_EQ(a->t->stats().bytes_skipped, 0u);
  EXPECT_FALSE(b->pinned.contains(first_pins));  // the first transfer's copies are garbage
}

TEST_F(snapshot_transfer_test, an_incomplete_transfer_or_a_missing_record_is_dropped) {
  fill(2, 100);
  const auto s = install_of(7);
  auto refs = streams::snapshot_part_references(
      decode_group_snapshot(std::span<const std::byte>(s.data).subspan(8))->streams);
  ASSERT_TRUE(refs && refs->size() == 2u);
  auto opening = [&](std::uint64_t transfer) {
    return raft::wire::snapshot_chunk{transfer, 0, s.last_index, s.last_term, {}};
  };
  auto chunk_with = [&](std::uint64_t transfer, std::uint32_t seq, std::size_t record) {
    const auto& r = (*refs)[record];
    raft::wire::snapshot_chunk c{transfer, seq, s.last_index, s.last_term, {}};
    c.pieces.push_back(raft::wire::record_piece{
        raft::wire::record_key{r.at.segment, r.at.offset, r.at.core, r.at.data_offset, r.begin, r.size}, 0,
        std::as_bytes(std::span(bodies[record].data(), bodies[record].size()))});
    return c;
  };
  auto install_for = [&](std::uint64_t transfer, std::uint32_t chunks) {
    snapshot_transfers::install i = s;
    i.peer = a->id;
    i.transfer = transfer;
    i.chunks = chunks;
    return i;
  };
  auto last_ack = [&] {
    auto d = raft::wire::decode_frame(b->frames_out.back());
    return std::get<raft::wire::snapshot_chunk_ack>((*d)->msg.payload);
  };
  // Two chunks of records announced, one arrived: dropped, what was written kept for a resume.
  b->t->on_chunk(a->id, group_id(5), opening(50));
  EXPECT_EQ(last_ack().resume, 0u);
  b->t->on_chunk(a->id, group_id(5), chunk_with(50, 1, 0));
  settle();
  b->t->on_install(install_for(50, 3));
  settle();
  EXPECT_TRUE(b->delivered.empty());
  EXPECT_EQ(b->t->stats().transfers_dropped, 1u);
  EXPECT_EQ(b->t->kept(), 1u);
  EXPECT_EQ(b->pinned.size(), 1u);
  // The dropped transfer's opening again (a stale frame): ignored, nothing answered.
  const std::size_t frames = b->frames_out.size();
  b->t->on_chunk(a->id, group_id(5), opening(50));
  EXPECT_EQ(b->frames_out.size(), frames);
  EXPECT_EQ(b->t->kept(), 1u);
  // Every chunk arrived, but the snapshot references a record none of them held: discarded, unpinned.
  // (The next transfer of the snapshot is told record 0 is there.)
  b->t->on_chunk(a->id, group_id(5), opening(51));
  EXPECT_EQ(last_ack().resume, 1u);
  EXPECT_EQ(b->t->stats().transfers_resumed, 1u);
  settle();
  b->t->on_install(install_for(51, 1));
  settle();
  EXPECT_TRUE(b->delivered.empty());
  EXPECT_EQ(b->t->stats().transfers_dropped, 2u);
  EXPECT_EQ(b->t->kept(), 0u);
  EXPECT_TRUE(b->pinned.empty());
  // An install for a transfer that never started, and a chunk that is not the first of its transfer.
  b->t->on_install(install_for(52, 1));
  b->t->on_chunk(a->id, group_id(5), chunk_with(53, 1, 1));
  EXPECT_EQ(b->t->receiving(), 0u);
  EXPECT_EQ(b->t->stats().transfers_dropped, 3u);
  // A chunk naming another snapshot than its opening: dropped, nothing kept.
  b->t->on_chunk(a->id, group_id(5), opening(53));
  auto other = chunk_with(53, 1, 0);
  other.last_index = raft::log_index(8);
  b->t->on_chunk(a->id, group_id(5), other);
  EXPECT_EQ(b->t->receiving() + b->t->kept(), 0u);
  EXPECT_EQ(b->t->stats().transfers_dropped, 4u);
  // Both records, both chunks: delivered.
  b->t->on_chunk(a->id, group_id(5), opening(54));
  b->t->on_chunk(a->id, group_id(5), chunk_with(54, 1, 0));
  b->t->on_chunk(a->id, group_id(5), chunk_with(54, 2, 1));
  settle();
  b->t->on_install(install_for(54, 3));
  settle();
  ASSERT_EQ(b->delivered.size(), 1u);
  EXPECT_EQ(read_on_b(b->delivered[0]), all_bodies());
}

}  // namespace
}  // namespace weir::replica

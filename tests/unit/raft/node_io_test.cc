// node_io (node_io.h) driven through the raft_io function pointers, as libraft drives it: a message sent
// after set_term / set_vote leaves only once that batch is durable; append callbacks fire after the
// sync; load returns what was durable; close cancels what is pending; heartbeat replies are clamped.
#include "raft/node_io.h"

#include <gtest/gtest.h>

#include <map>

#include "raft/libraft.h"
#include "raft/wire_format.h"
#include "storage/mem_env.h"
#include "support/sim/delayed_flusher.h"
#include "support/sim/sim_scheduler.h"

namespace weir::raft {
namespace {

using std::chrono::milliseconds;

// A transport that keeps what is sent (and in which lane) and lets the test deliver packets; the test
// says how many bulk packets are still queued (bulk_queued).
class recording_transport final : public transport {
 public:
  void send(node_id to, std::vector<std::byte> packet) override {
    sent.emplace_back(to, std::move(packet));
    urgent.push_back(false);
  }
  void send_urgent(node_id to, std::vector<std::byte> packet) override {
    sent.emplace_back(to, std::move(packet));
    urgent.push_back(true);
  }
  std::size_t bulk_queued(node_id to) const override {
    auto it = queued.find(to);
    return it == queued.end() ? 0 : it->second;
  }
  void set_receiver(receiver r) override { rx = std::move(r); }
  // The frames of one packet.
  static std::vector<wire::message> frames_of(std::span<const std::byte> rest) {
    std::vector<wire::message> out;
    while (!rest.empty()) {
      auto d = wire::decode_frame(rest);
      EXPECT_TRUE(d && d->has_value());
      if (!d || !d->has_value()) break;
      out.push_back((*d)->msg);
      rest = rest.subspan((*d)->consumed);
    }
    return out;
  }
  std::vector<bool> urgent;  // per packet of `sent`
  std::map<node_id, std::size_t> queued;
  std::vector<wire::message> frames_to(node_id to) const {
    std::vector<wire::message> out;
    for (const auto& [dst, p] : sent) {
      if (dst != to) continue;
      for (auto& m : frames_of(p)) out.push_back(std::move(m));
    }
    return out;
  }
  std::vector<std::pair<node_id, std::vector<std::byte>>> sent;
  receiver rx;
};

struct callbacks {
  static inline std::vector<int> appended;
  static inline std::vector<int> sent;
  static inline std::vector<raft_message> received;
  static inline raft_io* reply_from = nullptr;  // if set, recv answers every AppendEntries from here
  static void on_append(raft_io_append*, int status) { appended.push_back(status); }
  static void on_send(raft_io_send* req, int status) {
    sent.push_back(status);
    delete req;
  }
  static void on_tick(raft_io*) {}
  static void on_recv(raft_io*, raft_message* m) {
    received.push_back(*m);
    if (m->type == RAFT_IO_APPEND_ENTRIES && reply_from != nullptr) {
      raft_message r{};
      r.type = RAFT_IO_APPEND_ENTRIES_RESULT;
      r.server_id = m->server_id;
      r.append_entries_result = {m->append_entries.term, 0, 9};  // libraft's reply: its last stored index
      reply_from->send(reply_from, new raft_io_send{}, &r, on_send);
    }
    if (m->type == RAFT_IO_APPEND_ENTRIES && m->append_entries.n_entries > 0) {
      raft_free(m->append_entries.entries[0].batch);
      raft_free(m->append_entries.entries);
    }
  }
  static void reset() {
    appended.clear();
    sent.clear();
    received.clear();
    reply_from = nullptr;
  }
};

struct node_fixture {
  storage::mem_env env;
  sim_scheduler sched{7};
  std::unique_ptr<sim_executor> ex;
  std::unique_ptr<delayed_flusher> flusher;
  std::unique_ptr<node_log> log;
  recording_transport net;
  std::unique_ptr<node_io> io;

  node_fixture() {
    callbacks::reset();
    boot();
  }
  ~node_fixture() { callbacks::reset(); }

  void boot() {
    ex = std::make_unique<sim_executor>(sched);
    flusher = std::make_unique<delayed_flusher>(*ex, [] { return milliseconds(5); });
    auto l = node_log::open(env, *flusher, "/raft/node.log");
    ASSERT_TRUE(l.has_value()) << l.err().reason;
    log = std::move(l).value();
    io = std::make_unique<node_io>(*ex, net, *log,
                                   node_io::options{node_id(1), {{node_id(1), "n1"}, {node_id(2), "n2"}}, 3});
  }

  // A started group: what libraft's raft_init + raft_start do to the raft_io.
  raft_io* start_group(std::uint32_t g, raft_term* term = nullptr, raft_id* vote = nullptr,
                       std::vector<std::string>* entries = nullptr) {
    raft_io* rio = io->io_of(group_id(g));
    EXPECT_EQ(rio->init(rio, 1, "n1"), 0);
    raft_term t = 0;
    raft_id v = 0;
    raft_snapshot* snap = nullptr;
    raft_index start = 0;
    raft_entry* ents = nullptr;
    size_t n = 0;
    EXPECT_EQ(rio->load(rio, &t, &v, &snap, &start, &ents, &n), 0);
    EXPECT_EQ(start, 1u);
    EXPECT_EQ(snap, nullptr);
    if (term != nullptr) *term = t;
    if (vote != nullptr) *vote = v;
    for (size_t i = 0; i < n && entries != nullptr; ++i)
      entries->emplace_back(static_cast<const char*>(ents[i].buf.base), ents[i].buf.len);
    // As libraft's entryBatchesDestroy: every distinct batch (load gives each entry its own).
    for (size_t i = 0; i < n; ++i)
      if (i == 0 || ents[i].batch != ents[i - 1].batch) raft_free(ents[i].batch);
    if (n > 0) raft_free(ents);
    EXPECT_EQ(rio->start(rio, 50, callbacks::on_tick, callbacks::on_recv), 0);
    return rio;
  }

  void close_all(std::initializer_list<raft_io*> ios) {
    for (raft_io* rio : ios) rio->close(rio, nullptr);
  }
};

raft_message vote_request(raft_term term) {
  raft_message m{};
  m.type = RAFT_IO_REQUEST_VOTE;
  m.server_id = 2;
  m.request_vote = {term, 1, 0, 0, false, false};
  return m;
}

TEST(raft_node_io, a_message_after_set_term_waits_for_the_sync) {
  node_fixture f;
  raft_io* g0 = f.start_group(0);
  raft_io* g1 = f.start_group(1);
  ASSERT_EQ(g0->set_term(g0, 2), 0);
  ASSERT_EQ(g0->set_vote(g0, 1), 0);
  auto m = vote_request(2);
  ASSERT_EQ(g0->send(g0, new raft_io_send{}, &m, callbacks::on_send), 0);
  // Group 1 has no pending term: its message goes out at the end of the turn.
  auto m1 = vote_request(1);
  ASSERT_EQ(g1->send(g1, new raft_io_send{}, &m1, callbacks::on_send), 0);
  f.sched.run_until(4);
  auto frames = f.net.frames_to(node_id(2));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].group, group_id(1));
  EXPECT_EQ(f.io->counters().frames_held, 1u);
  f.sched.run_until(5);  // the batch with term 2 and the vote is durable
  frames = f.net.frames_to(node_id(2));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1].group, group_id(0));
  EXPECT_EQ(std::get<wire::request_vote>(frames[1].payload).term, term_id(2));
  EXPECT_EQ(callbacks::sent, (std::vector<int>{0, 0}));
  f.close_all({g0, g1});
}

// A turn's frames for one peer leave in packets of at most max_packet_bytes, in the order they were sent:
// the receiver handles a packet whole, so a turn of megabytes of entries does not become one packet that
// holds every frame behind it (src/raft/README.md, "How the groups do their I/O"). Small frames share
// packets; a frame of own_packet_bytes or more goes alone, so that its entries are not copied again into a
// packet.
TEST(raft_node_io, a_turns_frames_leave_in_packets_of_bounded_size_in_order) {
  node_fixture f;
  raft_io* g0 = f.start_group(0);
  const std::vector<std::size_t> sizes = {300u << 10, 300u << 10, 1500u << 10, 10,         10,
                                          10,         20u << 10,  20u << 10,   300u << 10, 10};
  std::vector<std::vector<char>> data;
  for (std::size_t i = 0; i < sizes.size(); ++i) data.emplace_back(sizes[i], static_cast<char>('a' + i));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    raft_entry e{};
    e.term = 1;
    e.type = RAFT_COMMAND;
    e.buf.base = data[i].data();
    e.buf.len = data[i].size();
    raft_message m{};
    m.type = RAFT_IO_APPEND_ENTRIES;
    m.server_id = 2;
    m.append_entries = {1, i, 1, 0, &e, 1};
    ASSERT_EQ(g0->send(g0, new raft_io_send{}, &m, callbacks::on_send), 0);
  }
  f.sched.run_until(1);
  // Packets: each large frame alone; the five small ones after the 1.5 MiB frame share one (it reaches
  // own_packet_bytes with the second 20 KiB frame and takes no more); the last small frame starts another.
  ASSERT_EQ(f.net.sent.size(), 6u);
  std::vector<std::size_t> per_packet;
  for (const auto& [to, packet] : f.net.sent) {
    EXPECT_EQ(to, node_id(2));
    std::span<const std::byte> rest(packet);
    std::size_t frames = 0;
    while (!rest.empty()) {
      auto d = wire::decode_frame(rest);
      ASSERT_TRUE(d && d->has_value());
      rest = rest.subspan((*d)->consumed);
      ++frames;
    }
    EXPECT_TRUE(packet.size() <= node_io::max_packet_bytes || frames == 1)
        << packet.size() << " bytes, " << frames;
    per_packet.push_back(frames);
  }
  EXPECT_EQ(per_packet, (std::vector<std::size_t>{1, 1, 1, 5, 1, 1}));
  const auto frames = f.net.frames_to(node_id(2));
  ASSERT_EQ(frames.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto& ae = std::get<wire::append_entries>(frames[i].payload);
    EXPECT_EQ(ae.prev_log_index, log_index(i));
    ASSERT_EQ(ae.entries.size(), 1u);
    EXPECT_EQ(ae.entries[0].data.size(), sizes[i]);
  }
  f.close_all({g0});
}

// An AppendEntries of `group_io` to node 2: a heartbeat (no entry) or one entry of `bytes` bytes.
void send_append(raft_io* group_io, std::uint64_t prev, std::size_t bytes,
                 unsigned short type = RAFT_COMMAND) {
  std::vector<char> data(std::max<std::size_t>(bytes, 1), 'e');
  raft_entry e{};
  e.term = 1;
  e.type = type;
  e.buf.base = data.data();
  e.buf.len = data.size();
  raft_message m{};
  m.type = RAFT_IO_APPEND_ENTRIES;
  m.server_id = 2;
  m.append_entries = {1, prev, 1, 0, bytes > 0 ? &e : nullptr, bytes > 0 ? 1u : 0u};
  ASSERT_EQ(group_io->send(group_io, new raft_io_send{}, &m, callbacks::on_send), 0);
}

// What one packet holds: per frame, its group and its number of entries (-1: not an AppendEntries).
std::vector<std::pair<std::uint32_t, int>> contents(std::span<const std::byte> packet) {
  std::vector<std::pair<std::uint32_t, int>> out;
  for (const auto& m : recording_transport::frames_of(packet)) {
    const auto* ae = std::get_if<wire::append_entries>(&m.payload);
    out.emplace_back(m.group.value(), ae != nullptr ? static_cast<int>(ae->entries.size()) : -1);
  }
  return out;
}

// Lanes (node_io.h): group 1's heartbeat and vote go ahead of megabytes of group 0's entries, in the
// urgent lane; group 0's heartbeat stays behind group 0's entries, in the bulk lane.
TEST(raft_node_io, small_messages_of_other_groups_overtake_entries_but_not_their_own) {
  node_fixture f;
  raft_io* g0 = f.start_group(0);
  raft_io* g1 = f.start_group(1);
  for (std::uint64_t i = 0; i < 4; ++i) send_append(g0, i, 300u << 10);  // 1.2 MiB of group 0's entries
  send_append(g1, 0, 0);                                                 // group 1's heartbeat
  send_append(g0, 4, 0);                                                 // group 0's heartbeat
  auto vote = vote_request(1);
  ASSERT_EQ(g1->send(g1, new raft_io_send{}, &vote, callbacks::on_send), 0);
  f.sched.run_until(1);
  using c = std::vector<std::pair<std::uint32_t, int>>;
  ASSERT_EQ(f.net.sent.size(), 6u);
  EXPECT_EQ(f.net.urgent, (std::vector<bool>{true, false, false, false, false, false}));
  EXPECT_EQ(contents(f.net.sent[0].second), (c{{1, 0}, {1, -1}}));  // sent first
  for (std::size_t k = 1; k <= 4; ++k)
    EXPECT_EQ(contents(f.net.sent[k].second), (c{{0, 1}})) << k;  // a large frame: a packet of its own
  EXPECT_EQ(contents(f.net.sent[5].second), (c{{0, 0}}));
  EXPECT_EQ(f.io->counters().urgent_packets_sent, 1u);

  // A later turn: while the transport still queues group 0's bulk packets, its heartbeat follows them;
  // once they left, it still does until node 2 acknowledged them (they may be in the bulk lane's
  // connection); then it goes urgent.
  f.net.sent.clear();
  f.net.urgent.clear();
  f.net.queued[node_id(2)] = 1;  // the last of the two
  send_append(g0, 4, 0);
  send_append(g1, 0, 0);
  f.sched.run_until(2);
  ASSERT_EQ(f.net.sent.size(), 2u);
  EXPECT_EQ(f.net.urgent, (std::vector<bool>{true, false}));
  EXPECT_EQ(contents(f.net.sent[0].second), (c{{1, 0}}));
  EXPECT_EQ(contents(f.net.sent[1].second), (c{{0, 0}}));
  auto heartbeat_lane = [&](int turn) {
    f.net.sent.clear();
    f.net.urgent.clear();
    send_append(g0, 4, 0);
    f.sched.run_until(turn);
    EXPECT_EQ(f.net.sent.size(), 1u);
    return f.net.urgent;
  };
  f.net.queued[node_id(2)] = 0;
  EXPECT_EQ(heartbeat_lane(3), (std::vector<bool>{false}));  // left the queue, not acknowledged
  auto result_from_2 = [&](std::uint64_t term, std::uint64_t rejected, std::uint64_t last) {
    std::vector<std::byte> packet;
    wire::encode_frame(
        wire::message{group_id(0),
                      wire::append_entries_result{term_id(term), log_index(rejected), log_index(last)}},
        packet);
    f.net.rx(node_id(2), packet);
  };
  result_from_2(1, 0, 3);
  EXPECT_EQ(heartbeat_lane(4), (std::vector<bool>{false}));  // index 4 not acknowledged yet
  result_from_2(1, 4, 3);                                    // a rejection vouches for nothing
  EXPECT_EQ(heartbeat_lane(5), (std::vector<bool>{false}));
  result_from_2(1, 0, 4);
  EXPECT_EQ(heartbeat_lane(6), (std::vector<bool>{true}));
  result_from_2(2, 0, 1);  // a newer term: what was acknowledged in term 1 no longer counts
  EXPECT_EQ(heartbeat_lane(7), (std::vector<bool>{false}));
  f.close_all({g0, g1});
}

// A new leader's first AppendEntries (its barrier, a few bytes) goes in the urgent lane, as a heartbeat
// would, and behind its group's bulk frames like one; a large barrier or a command entry does not.
TEST(raft_node_io, a_small_barrier_takes_the_urgent_lane_unless_its_group_has_bulk_queued) {
  node_fixture f;
  raft_io* g0 = f.start_group(0);
  raft_io* g1 = f.start_group(1);
  for (std::uint64_t i = 0; i < 4; ++i) send_append(g0, i, 300u << 10);  // group 0's entries
  send_append(g1, 0, 8, RAFT_BARRIER);                                   // group 1's barrier
  send_append(g0, 4, 8, RAFT_BARRIER);                                   // group 0's, behind its entries
  f.sched.run_until(1);
  using c = std::vector<std::pair<std::uint32_t, int>>;
  ASSERT_EQ(f.net.sent.size(), 6u);  // each large frame in a packet of its own
  EXPECT_EQ(f.net.urgent, (std::vector<bool>{true, false, false, false, false, false}));
  EXPECT_EQ(contents(f.net.sent[0].second), (c{{1, 1}}));
  EXPECT_EQ(contents(f.net.sent[4].second), (c{{0, 1}}));
  EXPECT_EQ(contents(f.net.sent[5].second), (c{{0, 1}}));  // group 0's barrier, behind its entries
  f.net.sent.clear();
  f.net.urgent.clear();
  f.net.queued[node_id(2)] = 0;
  send_append(g1, 1, 4096, RAFT_BARRIER);  // not a few bytes
  send_append(g1, 2, 8, RAFT_COMMAND);     // a small command: bulk as ever
  f.sched.run_until(2);
  EXPECT_EQ(f.net.urgent, (std::vector<bool>{false}));
  f.close_all({g0, g1});
}

// A small message held for a term/vote sync keeps its place behind the group's held entries.
TEST(raft_node_io, a_held_heartbeat_stays_behind_the_held_entries_of_its_group) {
  node_fixture f;
  raft_io* g0 = f.start_group(0);
  ASSERT_EQ(g0->set_term(g0, 2), 0);
  send_append(g0, 0, 1000);
  send_append(g0, 1, 0);
  f.sched.run_until(5);  // the term is durable: both leave
  using c = std::vector<std::pair<std::uint32_t, int>>;
  ASSERT_EQ(f.net.sent.size(), 1u);
  EXPECT_EQ(f.net.urgent, (std::vector<bool>{false}));
  EXPECT_EQ(contents(f.net.sent[0].second), (c{{0, 1}, {0, 0}}));
  f.close_all({g0});
}

TEST(raft_node_io, append_callbacks_fire_after_the_sync_and_load_returns_what_was_synced) {
  node_fixture f;
  {
    raft_io* g = f.start_group(4);
    g->set_term(g, 3);
    g->set_vote(g, 2);
    std::string a = "first", b = "second";
    raft_entry e[2] = {{3, RAFT_COMMAND, {a.data(), a.size()}, nullptr},
                       {3, RAFT_COMMAND, {b.data(), b.size()}, nullptr}};
    raft_io_append req{};
    ASSERT_EQ(g->append(g, &req, e, 2, callbacks::on_append), 0);
    f.sched.run_until(4);
    EXPECT_TRUE(callbacks::appended.empty());
    f.sched.run_until(5);
    EXPECT_EQ(callbacks::appended, (std::vector<int>{0}));
    // Not synced before the crash: lost.
    std::string c = "lost";
    raft_entry e2[1] = {{3, RAFT_COMMAND, {c.data(), c.size()}, nullptr}};
    raft_io_append req2{};
    ASSERT_EQ(g->append(g, &req2, e2, 1, callbacks::on_append), 0);
    f.sched.run_until(7);
    f.env.crash();
    f.ex->halt();
    g->close(g, nullptr);  // cancels the pending append
    EXPECT_EQ(callbacks::appended, (std::vector<int>{0, RAFT_CANCELED}));
    f.io.reset();
    f.log.reset();
    f.env.restart();
  }
  f.boot();
  raft_term term = 0;
  raft_id vote = 0;
  std::vector<std::string> entries;
  raft_io* g = f.start_group(4, &term, &vote, &entries);
  EXPECT_EQ(term, 3u);
  EXPECT_EQ(vote, 2u);
  EXPECT_EQ(entries, (std::vector<std::string>{"first", "second"}));
  f.close_all({g});
}

TEST(raft_node_io, a_heartbeat_reply_vouches_only_for_what_the_heartbeat_covered) {
  node_fixture f;
  raft_io* g = f.start_group(2);
  callbacks::reply_from = g;
  // An AppendEntries without entries at prev_log_index 5, from node 2.
  std::vector<std::byte> packet;
  wire::encode_frame(
      wire::message{group_id(2),
                    wire::append_entries{term_id(4), log_index(5), term_id(4), log_index(5), {}}},
      packet);
  f.net.rx(node_id(2), packet);
  ASSERT_EQ(callbacks::received.size(), 1u);
  EXPECT_EQ(callbacks::received[0].server_id, 2u);
  EXPECT_STREQ(callbacks::received[0].server_address, "n2");
  f.sched.run_until(1);
  auto frames = f.net.frames_to(node_id(2));
  ASSERT_EQ(frames.size(), 1u);
  // libraft said 9 (its whole log); only 5 was checked against the leader's log.
  EXPECT_EQ(std::get<wire::append_entries_result>(frames[0].payload).last_log_index, log_index(5));
  EXPECT_EQ(f.io->counters().append_results_clamped, 1u);
  f.close_all({g});
}

void on_put(raft_io_snapshot_put*, int status) {
  callbacks::appended.push_back(100 + status);
}

// The longest a follower went without an AppendEntries of its leader counts only gaps between messages
// of the same leader in the same term (a new term or leader starts over).
TEST(raft_node_io, the_longest_leader_silence_is_between_appends_of_one_leader_and_term) {
  node_fixture f;
  raft_io* g = f.start_group(2);
  auto heartbeat_at = [&](std::int64_t ms, std::uint64_t term) {
    f.sched.run_until(ms);
    std::vector<std::byte> packet;
    wire::encode_frame(
        wire::message{group_id(2),
                      wire::append_entries{term_id(term), log_index(0), term_id(0), log_index(0), {}}},
        packet);
    f.net.rx(node_id(2), packet);
  };
  // Gaps under 250 ms: longer ones are stalls of this node, left out of libraft's clock (raft_now).
  heartbeat_at(100, 1);
  heartbeat_at(200, 1);
  heartbeat_at(400, 1);
  EXPECT_EQ(f.io->counters().longest_leader_silence_ms, 200);
  heartbeat_at(2000, 2);  // a new term: not a silence of the same leader
  heartbeat_at(2100, 2);
  EXPECT_EQ(f.io->counters().longest_leader_silence_ms, 200);
  heartbeat_at(2340, 2);
  EXPECT_EQ(f.io->counters().longest_leader_silence_ms, 240);
  f.close_all({g});
}

TEST(raft_node_io, an_append_below_the_followers_snapshot_starts_at_the_snapshot) {
  node_fixture f;
  raft_io* g = f.start_group(1);
  std::string state = "state";
  raft_buffer buf{state.data(), state.size()};
  raft_snapshot snap{};
  snap.index = 20;
  snap.term = 3;
  raft_configuration_init(&snap.configuration);
  raft_configuration_add(&snap.configuration, 1, "n1", RAFT_VOTER);
  snap.configuration_index = 1;
  snap.bufs = &buf;
  snap.n_bufs = 1;
  raft_io_snapshot_put put{};
  ASSERT_EQ(g->snapshot_put(g, 0, &put, &snap, on_put), 0);
  raft_configuration_close(&snap.configuration);
  f.sched.run_until(10);
  EXPECT_EQ(callbacks::appended, (std::vector<int>{100}));

  const std::string data = "e";
  const auto bytes = std::as_bytes(std::span<const char>(data.data(), data.size()));
  auto deliver = [&](std::uint64_t prev, std::uint64_t n, std::uint64_t term_at_20) {
    wire::append_entries ae{term_id(3), log_index(prev), term_id(3), log_index(25), {}};
    for (std::uint64_t i = prev + 1; i <= prev + n; ++i)
      ae.entries.push_back(wire::entry{term_id(i == 20 ? term_at_20 : 3), 1, bytes});
    std::vector<std::byte> packet;
    wire::encode_frame(wire::message{group_id(1), std::move(ae)}, packet);
    f.net.rx(node_id(2), packet);
    return callbacks::received.back().append_entries;
  };
  // Entries 16..24: the follower gets 21..24 after (20, term 3).
  auto a = deliver(15, 9, 3);
  EXPECT_EQ(a.prev_log_index, 20u);
  EXPECT_EQ(a.prev_log_term, 3u);
  EXPECT_EQ(a.n_entries, 4u);
  // Entries 11..12, all covered by the snapshot: a heartbeat at the snapshot.
  a = deliver(10, 2, 3);
  EXPECT_EQ(a.prev_log_index, 20u);
  EXPECT_EQ(a.n_entries, 0u);
  // An entry at the snapshot index with another term is left for libraft to judge.
  a = deliver(15, 9, 2);
  EXPECT_EQ(a.prev_log_index, 15u);
  EXPECT_EQ(a.n_entries, 9u);
  // At or above the snapshot: untouched.
  a = deliver(22, 1, 3);
  EXPECT_EQ(a.prev_log_index, 22u);
  EXPECT_EQ(f.io->counters().append_entries_trimmed, 2u);
  f.close_all({g});
}

TEST(raft_node_io, frames_for_unknown_groups_and_damaged_packets_are_dropped) {
  node_fixture f;
  raft_io* g = f.start_group(0);
  std::vector<std::byte> packet;
  wire::encode_frame(wire::message{group_id(99), wire::timeout_now{term_id(1), log_index(1), term_id(1)}},
                     packet);
  wire::encode_frame(wire::message{group_id(0), wire::timeout_now{term_id(1), log_index(1), term_id(1)}},
                     packet);
  f.net.rx(node_id(2), packet);
  EXPECT_EQ(callbacks::received.size(), 1u);
  packet.back() ^= std::byte{1};
  f.net.rx(node_id(2), packet);
  EXPECT_EQ(callbacks::received.size(), 1u);
  EXPECT_EQ(f.io->counters().frames_dropped, 3u);
  f.close_all({g});
}

}  // namespace
}  // namespace weir::raft

// state_machine::snapshot / restore: a restored machine behaves exactly like the one it was taken from,
// and damaged blobs are rejected without crashing.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "streams/command_codec.h"
#include "streams/state_machine.h"
#include "streams/wire.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

std::span<const std::byte> as_span(const std::vector<std::byte>& v) {
  return {v.data(), v.size()};
}

std::vector<std::byte> to_bytes(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return std::vector<std::byte>(p, p + s.size());
}

// A stand-in for the write-ahead log: every command gets a position and its encoding is kept, so the
// bytes of cold slices can be read back (as the server's hot tier does with pread).
class fake_log {
 public:
  // Stores the encoding of `c`; returns its location (data_offset set when the command carries data).
  std::optional<disk_location> write(const command& c, std::uint32_t core) {
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t data_offset = none;
    std::string bytes = encode(c, &data_offset);
    disk_location at{segment_, offset_, core, data_offset};
    records_[{segment_, offset_}] = bytes;
    offset_ += 24 + bytes.size();
    if (offset_ > 600) {
      ++segment_;
      offset_ = 40;
    }
    if (data_offset == none) return std::nullopt;
    return at;
  }

  std::string bytes_of(const chunk_slice& s) const {
    if (!s.cold()) return std::string(s.view());
    auto it = records_.find({s.at.segment, s.at.offset});
    if (it == records_.end()) {
      ADD_FAILURE() << "cold slice at segment " << s.at.segment << " offset " << s.at.offset
                    << " points at no record";
      return {};
    }
    return it->second.substr(s.at.data_offset + s.begin, s.size);
  }

 private:
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> records_;
  std::uint64_t segment_ = 1;
  std::uint64_t offset_ = 40;
};

std::string describe(const stream_meta& m) {
  return m.path + " gen " + std::to_string(m.generation) + " ct " + m.content_type + " json " +
         std::to_string(m.json) + " ttl " + std::to_string(m.expiry.ttl_seconds.value_or(0)) + " at " +
         std::to_string(m.expiry.expires_at_ms.value_or(0)) + " '" + m.expiry.expires_at_text + "' closed " +
         std::to_string(m.closed) + " tail " + std::to_string(m.tail.value());
}

std::string describe(const outcome& o) {
  std::string s = "code " + std::to_string(static_cast<int>(o.code)) + " m" + std::to_string(o.mutated) +
                  " c" + std::to_string(o.created) + " a" + std::to_string(o.appended) + " cn" +
                  std::to_string(o.closed_now) + " d" + std::to_string(o.duplicate) + " pe" +
                  std::to_string(o.producer_epoch) + " ps" + std::to_string(o.producer_seq) + " es" +
                  std::to_string(o.expected_seq) + " rs" + std::to_string(o.received_seq);
  if (o.meta) s += " meta " + describe(*o.meta);
  for (const auto& p : o.removed) s += " removed " + p;
  for (const auto& p : o.release) s += " release " + p.source;
  if (o.resolution) s += " point " + std::to_string(o.resolution->point.value());
  return s;
}

// Everything a client or the server can observe of one machine, as text (so a mismatch prints).
std::string observe(const state_machine& sm, const fake_log& disk, const std::vector<std::string>& paths,
                    std::int64_t now) {
  std::string out;
  auto slices = [&](const read_result& r) {
    out += " code " + std::to_string(static_cast<int>(r.code));
    for (const chunk_slice& s : r.plan.slices) {
      out += " [" + std::to_string(s.at.segment) + ":" + std::to_string(s.at.offset) + ":" +
             std::to_string(s.at.core) + ":" + std::to_string(s.at.data_offset) + " " +
             std::to_string(s.begin) + "+" + std::to_string(s.size) + " '" + disk.bytes_of(s) + "']";
    }
    out +=
        " next " + std::to_string(r.plan.next.value()) + " utd " + std::to_string(r.plan.up_to_date) + "\n";
  };
  for (const std::string& p : paths) {
    read_result h = sm.head(p, now);
    out += p + ": head " + std::to_string(static_cast<int>(h.code)) +
           (h.meta ? " " + describe(*h.meta) : "") + "\n";
    slices(sm.read(p, std::nullopt, 1 << 20));
    slices(sm.read(p, stream_offset(3), 5));
  }
  auto links = [&](std::vector<state_machine::fork_link> v, const char* what) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    for (const auto& l : v)
      out += std::string(what) + " " + l.path + " <- " + l.source + " @" + std::to_string(l.point.value()) +
             "\n";
  };
  links(sm.forks(), "fork");
  links(sm.forks_to_stitch(), "to stitch");
  auto refs = sm.ref_counts();
  std::sort(refs.begin(), refs.end());
  for (const auto& [p, n] : refs) out += "refs " + p + " " + std::to_string(n) + "\n";
  auto expired = sm.expired(now);
  std::sort(expired.begin(), expired.end());
  for (const auto& p : expired) out += "expired " + p + "\n";
  for (const auto& m : sm.list("/", now)) out += "listed " + describe(m) + "\n";
  for (std::uint32_t core : {0u, 1u}) {
    for (std::uint64_t seg : sm.referenced_segments(core))
      out += "segment " + std::to_string(core) + ":" + std::to_string(seg) + "\n";
  }
  out += "size " + std::to_string(sm.size()) + "\n";
  return out;
}

// Applies seeded random commands to one or more machines (the same commands to each) and checks that
// they answer alike. The decisions come from the first machine's state.
class random_driver {
 public:
  explicit random_driver(std::uint64_t seed) : rng_(seed) {}

  const std::vector<std::string>& paths() const { return paths_; }
  std::int64_t now() const { return now_; }
  const fake_log& disk() const { return disk_; }
  // What recovery does after a restore: link every fork waiting for its source's log.
  void link_forks(const std::vector<state_machine*>& sms) { stitch(sms); }
  // Every record written gets its place, as at a checkpoint's cut (no command in flight).
  void locate_all(const std::vector<state_machine*>& sms) {
    while (!pending_.empty()) locate_pending(sms);
  }

  void step(const std::vector<state_machine*>& sms) {
    now_ += static_cast<std::int64_t>(pick(1500));
    unsigned op = pick(100);
    if (op < 16) return create(sms);
    if (op < 46) return append(sms);
    if (op < 52) {
      // Half of the deletes hold the path for up to 5 s (kind 8), so that holds cross restores too.
      const std::int64_t hold = pick(2) == 0 ? 0 : static_cast<std::int64_t>(1 + pick(5000));
      return run(sms, delete_command{any_path(), now_, hold});
    }
    if (op < 57) return run(sms, touch_command{any_path(), now_});
    if (op < 61) return run(sms, expire_command{any_path(), now_});
    if (op < 71) return fork(sms, false);
    if (op < 75) return fork(sms, true);
    if (op < 79) return stitch(sms);
    if (op < 90) return locate_pending(sms);
    if (op < 98) return evict_some(sms);
    now_ += 6000;  // let TTLs run out
  }

 private:
  unsigned pick(unsigned n) { return static_cast<unsigned>(rng_() % n); }
  const std::string& any_path() { return paths_[pick(static_cast<unsigned>(paths_.size()))]; }
  std::optional<stream_meta> meta(state_machine& sm, const std::string& p) { return sm.head(p, now_).meta; }

  std::string body_for(bool json, std::uint32_t& messages) {
    std::string s;
    messages = 1 + pick(3);
    for (std::uint32_t i = 0; i < messages; ++i) {
      s += json ? "{\"n\":" + std::to_string(counter_++) + "}," : "x" + std::to_string(counter_++) + ";";
    }
    if (!json) messages = 0;
    return s;
  }

  // Applies `c` (whose encoding is `as_logged`) to every machine through `make`, compares the outcomes,
  // feeds fork releases back like the server does, and queues the record's location.
  void run(const std::vector<state_machine*>& sms, const command& c) {
    run_each(sms, c, [&](state_machine&) { return c; });
  }
  template <class Make>
  void run_each(const std::vector<state_machine*>& sms, const command& as_logged, Make make) {
    std::optional<disk_location> at = disk_.write(as_logged, pick(2));
    std::optional<std::string> first;
    outcome kept;
    for (state_machine* sm : sms) {
      outcome o = sm->apply(make(*sm));
      std::string d = describe(o);
      std::deque<fork_release_command> release(o.release.begin(), o.release.end());
      while (!release.empty()) {
        outcome r = sm->fork_release(release.front());
        release.pop_front();
        d += " | " + describe(r);
        release.insert(release.end(), r.release.begin(), r.release.end());
      }
      if (!first) {
        first = d;
        kept = o;
      } else {
        EXPECT_EQ(d, *first) << "outcomes differ";
      }
    }
    if (at && kept.appended && kept.meta) {
      pending_.push_back({kept.meta->path, kept.meta->generation, kept.meta->tail.value(), *at});
      if (pick(3) == 0) locate_pending(sms);
    }
  }

  void create(const std::vector<state_machine*>& sms) {
    const std::string& p = paths_[pick(3)];  // not a fork path
    create_command c = make_create(p, p == "/j" ? "application/json" : "text/plain", "", now_);
    std::uint32_t messages = 0;
    if (pick(3) > 0) c.initial = bytes(body_for(p == "/j", messages), messages);
    if (pick(6) == 0) c.expiry.ttl_seconds = 1 + pick(5);
    if (pick(10) == 0) {
      c.expiry.expires_at_ms = now_ + 2000 + pick(8000);
      c.expiry.expires_at_text = "at " + std::to_string(*c.expiry.expires_at_ms);
    }
    c.closed = pick(12) == 0;
    run(sms, c);
  }

  void append(const std::vector<state_machine*>& sms) {
    const std::string& p = any_path();
    auto m = meta(*sms[0], p);
    bool json = m ? m->json : false;
    append_command a = make_append(p, "", now_);
    std::uint32_t messages = 0;
    if (pick(8) > 0) a.body = bytes(body_for(json, messages), messages);
    if (pick(10) == 0) a.content_type = pick(2) ? "text/plain" : "application/json";
    if (pick(4) == 0) a.stream_seq = std::to_string(100 + pick(50));
    if (pick(2) == 0) {
      std::string id = pick(2) ? "p1" : "p2";
      auto& [epoch, seq] = producers_[p + id];
      if (pick(10) == 0) {
        ++epoch;
        seq = 0;
      }
      unsigned r = pick(10);
      std::uint64_t s =
          r < 6 ? seq : (r < 8 && seq > 0 ? seq - 1 : seq + 1 + pick(3));  // next, duplicate, gap
      a.producer = producer_ref{id, epoch - (pick(15) == 0 && epoch > 0 ? 1 : 0), s};
      if (r < 6) ++seq;
    }
    a.close = pick(25) == 0;
    run(sms, a);
  }

  // A fork of a random stream at a random point, created the way the server creates it (fork_retain on
  // the source, then create with the resolution). `replayed`: the create as log replay sees it, with no
  // link to the source's log (the fork then waits for stitch_fork).
  void fork(const std::vector<state_machine*>& sms, bool replayed) {
    const std::string& src = any_path();
    const std::string& dst = paths_[3 + pick(2)];
    auto m = meta(*sms[0], src);
    fork_retain_command r;
    r.source = src;
    if (m && pick(3) > 0) r.offset = stream_offset(pick(static_cast<unsigned>(m->tail.value()) + 2));
    if (m && !m->json && pick(4) == 0) r.sub_offset = pick(4);
    r.now_ms = now_;
    std::vector<outcome> retained;
    std::optional<std::string> first;
    for (state_machine* sm : sms) {
      retained.push_back(sm->fork_retain(r));
      std::string d = describe(retained.back());
      if (!first) first = d;
      EXPECT_EQ(d, *first) << "fork_retain outcomes differ";
    }
    (void)disk_.write(r, 0);
    if (retained[0].code != errc::ok) return;

    auto create_for = [&](std::size_t i) {
      const outcome& o = retained[i];
      create_command c = make_create(dst, "", "", now_);
      std::uint32_t messages = 0;
      if (pick(2) == 0) c.initial = bytes(body_for(m->json, messages), messages);
      fork_spec f;
      f.source = src;
      f.offset = r.offset;
      f.sub_offset = r.sub_offset;
      f.resolved = *o.resolution;
      f.resolved.retained = true;
      if (replayed) f.resolved.source_log.reset();
      if (o.sub_record) f.resolved.prefix = bytes(disk_.bytes_of(o.sub_record->data).substr(0, r.sub_offset));
      c.fork = std::move(f);
      return c;
    };
    // The same random choices for every machine: remember the generator (and the body counter) and
    // rewind them per machine.
    const auto saved = std::make_pair(rng_, counter_);
    std::vector<command> per_machine;
    for (std::size_t i = 0; i < sms.size(); ++i) {
      std::tie(rng_, counter_) = saved;
      per_machine.push_back(create_for(i));
    }
    std::size_t i = 0;
    run_each(sms, per_machine[0], [&](state_machine&) { return per_machine[i++]; });
  }

  // What the server does after replay or a restore: link each marked fork to its source's log.
  void stitch(const std::vector<state_machine*>& sms) {
    for (state_machine* sm : sms) {
      auto marked = sm->forks_to_stitch();
      std::sort(marked.begin(), marked.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
      for (const auto& l : marked) {
        // wal_recovery.cc does the same: a missing source leaves the fork unlinked.
        if (auto log = sm->log_of(l.source)) sm->stitch_fork(l.path, std::move(log));
      }
    }
  }

  void locate_pending(const std::vector<state_machine*>& sms) {
    if (pending_.empty()) return;
    std::size_t k = pick(static_cast<unsigned>(pending_.size()));
    auto [path, gen, end, at] = pending_[k];
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(k));
    std::optional<bool> first;
    for (state_machine* sm : sms) {
      bool found = sm->locate(gen, end, at);
      if (!first) first = found;
      EXPECT_EQ(found, *first) << "locate " << path << " " << end;
    }
    if (*first) located_.push_back({path, gen, end, at});
  }

  void evict_some(const std::vector<state_machine*>& sms) {
    if (located_.empty()) return;
    auto [path, gen, end, at] = located_[pick(static_cast<unsigned>(located_.size()))];
    // The bytes released may differ: a restored machine holds located records cold already.
    for (state_machine* sm : sms) (void)sm->evict(gen, end);
  }

  std::mt19937_64 rng_;
  fake_log disk_;
  std::int64_t now_ = t0;
  std::uint64_t counter_ = 0;
  const std::vector<std::string> paths_ = {"/a", "/b", "/j", "/f1", "/f2"};
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> producers_;  // epoch, next seq
  using where = std::tuple<std::string, std::uint64_t, std::uint64_t, disk_location>;
  std::vector<where> pending_;
  std::vector<where> located_;
};

void expect_alike(const state_machine& a, const state_machine& b, const random_driver& d, const char* when) {
  EXPECT_EQ(observe(b, d.disk(), d.paths(), d.now()), observe(a, d.disk(), d.paths(), d.now())) << when;
  EXPECT_EQ(b.snapshot(), a.snapshot()) << when;
  // A checkpoint's cut gives the same blob and the segments referenced_segments finds.
  for (std::uint32_t core : {0u, 1u}) {
    std::vector<std::uint64_t> segments;
    auto blob = a.cut().encode(core, segments);
    ASSERT_TRUE(blob.has_value()) << blob.err().reason;
    EXPECT_EQ(*blob, a.snapshot()) << when;
    EXPECT_EQ(segments, a.referenced_segments(core)) << when << ", core " << core;
  }
}

TEST(snapshot, random_command_sequences_behave_the_same_after_a_restore) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    random_driver d(seed);
    state_machine a;
    for (int i = 0; i < 200; ++i) d.step({&a});

    state_machine b;
    status restored = b.restore(as_span(a.snapshot()));
    ASSERT_TRUE(restored.has_value()) << restored.err().reason;
    // A restored fork is linked to its source again, as recovery does (and, for the comparison, the
    // forks `a` still waits to link too: a restart links every fork).
    d.link_forks({&a, &b});
    expect_alike(a, b, d, "right after the restore");
    for (int i = 0; i < 150; ++i) {
      d.step({&a, &b});
      expect_alike(a, b, d, "after a step");
      if (::testing::Test::HasFailure()) return;
    }

    // A second restart, from the restored machine's own snapshot.
    state_machine c;
    ASSERT_TRUE(c.restore(as_span(b.snapshot())).has_value());
    d.link_forks({&a, &b, &c});
    for (int i = 0; i < 100; ++i) d.step({&a, &b, &c});
    expect_alike(a, c, d, "after the second restore");
  }
}

TEST(snapshot, a_cut_encoded_after_more_commands_is_the_snapshot_of_its_moment) {
  // A checkpoint cuts the machine on its loop and encodes the cut on another thread while commands go
  // on: appends, evictions, deletes, forks and expiries after the cut must not show in its blob.
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    random_driver d(seed);
    state_machine a;
    for (int i = 0; i < 150; ++i) d.step({&a});
    d.locate_all({&a});
    const std::uint32_t core = static_cast<std::uint32_t>(seed % 2);
    snapshot_cut cut = a.cut();
    const std::vector<std::byte> then = a.snapshot();
    const std::vector<std::uint64_t> then_segments = a.referenced_segments(core);
    for (int i = 0; i < 100; ++i) d.step({&a});
    EXPECT_NE(a.snapshot(), then);  // the machine moved on
    std::vector<std::uint64_t> segments;
    auto blob = cut.encode(core, segments);
    ASSERT_TRUE(blob.has_value()) << blob.err().reason;
    EXPECT_EQ(*blob, then);
    EXPECT_EQ(segments, then_segments);
  }
}

TEST(snapshot, a_cut_whose_records_left_a_log_since_fails_to_encode) {
  state_machine sm;
  ASSERT_TRUE(sm.apply(make_create("/a")).mutated);
  for (const char* body : {"aaaa", "bbbb", "cccc"}) ASSERT_TRUE(sm.apply(make_append("/a", body)).appended);
  snapshot_cut cut = sm.cut();
  // The cold tier forgets the first record: the cut's records are no longer where it counted them.
  ASSERT_EQ(std::const_pointer_cast<memory_log>(sm.log_of("/a"))->forget_before(stream_offset(4)), 4u);
  std::vector<std::uint64_t> segments;
  auto blob = cut.encode(0, segments);
  ASSERT_FALSE(blob.has_value());
  EXPECT_EQ(blob.err().as<codec_errc>(), codec_errc::bad_value);
  // A new cut sees the forgotten record gone.
  auto again = sm.cut().encode(0, segments);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, sm.snapshot());
}

TEST(snapshot, the_random_driver_reaches_the_interesting_states) {
  // Guards the test above against a driver that never forks, evicts, soft-deletes or leaves forks
  // to stitch: counts them over the same seeds.
  int forks = 0, marked = 0, soft_deleted = 0, cold = 0, producers = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    random_driver d(seed);
    state_machine a;
    for (int i = 0; i < 200; ++i) {
      d.step({&a});
      forks += static_cast<int>(a.forks().size());
      marked += static_cast<int>(a.forks_to_stitch().size());
      for (const auto& p : d.paths()) {
        if (a.head(p, d.now()).code == errc::gone) ++soft_deleted;
        for (const auto& s : a.read(p, std::nullopt, 1 << 20).plan.slices) cold += s.cold() ? 1 : 0;
      }
    }
    std::string blob;
    for (std::byte b : a.snapshot()) blob.push_back(static_cast<char>(b));
    producers += blob.find("p1") != std::string::npos ? 1 : 0;
  }
  // Sums over every step of every seed.
  EXPECT_GT(forks, 1000);
  EXPECT_GT(marked, 100);
  EXPECT_GT(soft_deleted, 100);
  EXPECT_GT(cold, 1000);
  EXPECT_GT(producers, 10);
}

TEST(snapshot, where_each_streams_held_records_begin_survives_a_restore) {
  state_machine sm;
  ASSERT_TRUE(sm.apply(make_create("/cold")).mutated);
  ASSERT_TRUE(sm.apply(make_create("/warm")).mutated);
  for (const char* body : {"aaaa", "bbbb", "cccc"}) {
    ASSERT_TRUE(sm.apply(make_append("/cold", body)).appended);
    ASSERT_TRUE(sm.apply(make_append("/warm", body)).appended);
  }
  // Nothing forgotten: the version a weir without a cold tier reads.
  state_machine plain;
  ASSERT_TRUE(plain.restore(sm.snapshot()).has_value());
  auto log = std::const_pointer_cast<memory_log>(sm.log_of("/cold"));
  ASSERT_EQ(log->forget_before(stream_offset(8)), 8u);
  state_machine back;
  auto st = back.restore(sm.snapshot());
  ASSERT_TRUE(st.has_value()) << st.err().reason;
  EXPECT_EQ(back.log_of("/cold")->held_from().value(), 8u);
  EXPECT_EQ(back.log_of("/cold")->tail().value(), 12u);
  EXPECT_EQ(back.log_of("/warm")->held_from().value(), 0u);
  read_result r = back.read("/cold", stream_offset(0), 100);
  ASSERT_TRUE(r.plan.in_objects.has_value());
  EXPECT_EQ(r.plan.in_objects->stream, "/cold");
  EXPECT_EQ(back.snapshot(), sm.snapshot());
  // All of it forgotten: the tail still comes back.
  ASSERT_EQ(log->forget_before(stream_offset(12)), 4u);
  state_machine empty_held;
  ASSERT_TRUE(empty_held.restore(sm.snapshot()).has_value());
  EXPECT_EQ(empty_held.log_of("/cold")->tail().value(), 12u);
  EXPECT_EQ(empty_held.log_of("/cold")->record_count(), 0u);
}

TEST(snapshot, an_empty_machine_round_trips) {
  state_machine a;
  state_machine b;
  ASSERT_TRUE(b.restore(as_span(a.snapshot())).has_value());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.snapshot(), a.snapshot());
}

TEST(snapshot, a_stream_created_after_a_restore_gets_the_generation_it_would_have_had) {
  state_machine a;
  (void)a.create(make_create("/x"));
  (void)a.create(make_create("/y"));
  (void)a.remove(delete_command{"/y", t0});  // its generation is not reused
  state_machine b;
  ASSERT_TRUE(b.restore(as_span(a.snapshot())).has_value());
  outcome in_a = a.create(make_create("/z"));
  outcome in_b = b.create(make_create("/z"));
  EXPECT_EQ(in_a.meta->generation, 3u);
  EXPECT_EQ(in_b.meta->generation, 3u);
  EXPECT_EQ(b.head("/x", t0).meta->generation, 1u);
}

TEST(snapshot, a_held_path_stays_held_after_a_restore_until_its_hold_ends) {
  state_machine a;
  (void)a.create(make_create("/x"));
  ASSERT_EQ(a.remove(delete_command{"/x", t0, 10'000}).code, errc::ok);
  state_machine b;
  ASSERT_TRUE(b.restore(as_span(a.snapshot())).has_value());
  EXPECT_EQ(b.held_paths(), 1u);
  EXPECT_EQ(b.snapshot(), a.snapshot());
  create_command again = make_create("/x");
  again.now_ms = t0 + 9'999;
  EXPECT_EQ(b.create(again).code, errc::path_held);
  again.now_ms = t0 + 10'000;
  EXPECT_TRUE(b.create(again).created);
  EXPECT_EQ(b.held_paths(), 0u);
}

TEST(snapshot, producers_still_detect_duplicates_and_gaps_after_a_restore) {
  state_machine a;
  (void)a.create(make_create("/s"));
  append_command w = make_append("/s", "one");
  w.producer = producer_ref{"w", 3, 0};
  w.stream_seq = "0005";
  ASSERT_EQ(a.append(w).code, errc::ok);
  w.producer->seq = 1;
  w.stream_seq = "0006";
  ASSERT_EQ(a.append(w).code, errc::ok);
  state_machine b;
  ASSERT_TRUE(b.restore(as_span(a.snapshot())).has_value());

  outcome dup = b.append(w);
  EXPECT_TRUE(dup.duplicate);
  EXPECT_EQ(dup.producer_seq, 1u);
  append_command gap = w;
  gap.producer->seq = 4;
  gap.stream_seq.reset();
  outcome g = b.append(gap);
  EXPECT_EQ(g.code, errc::seq_gap);
  EXPECT_EQ(g.expected_seq, 2u);
  append_command stale = w;
  stale.producer->epoch = 2;
  EXPECT_EQ(b.append(stale).code, errc::stale_epoch);
  append_command seq_back = make_append("/s", "z");
  seq_back.stream_seq = "0006";
  EXPECT_EQ(b.append(seq_back).code, errc::seq_regression);
  append_command next = w;
  next.producer->seq = 2;
  next.stream_seq = "0007";
  EXPECT_EQ(b.append(next).code, errc::ok);
}

TEST(snapshot, ttl_and_expiry_continue_after_a_restore) {
  state_machine a;
  create_command ttl = make_create("/ttl");
  ttl.expiry.ttl_seconds = 10;
  (void)a.create(ttl);
  (void)a.touch(touch_command{"/ttl", t0 + 5000});  // renewed: lives until t0 + 15 s
  create_command at = make_create("/at");
  at.expiry.expires_at_ms = t0 + 8000;
  at.expiry.expires_at_text = "some day";
  (void)a.create(at);
  state_machine b;
  ASSERT_TRUE(b.restore(as_span(a.snapshot())).has_value());
  EXPECT_EQ(b.head("/at", t0 + 7999).meta->expiry.expires_at_text, "some day");
  EXPECT_EQ(b.head("/at", t0 + 8000).code, errc::not_found);
  EXPECT_EQ(b.head("/ttl", t0 + 14999).code, errc::ok);
  EXPECT_EQ(b.expired(t0 + 15000).size(), 2u);
  EXPECT_EQ(b.create(ttl).code, errc::ok);  // idempotent PUT compares the requested expiry
  outcome gone = b.expire(expire_command{"/ttl", t0 + 15000});
  EXPECT_EQ(gone.removed, std::vector<std::string>{"/ttl"});
}

TEST(snapshot, a_soft_deleted_source_with_forks_survives_and_cascades_after_a_restore) {
  state_machine a;
  (void)a.create(make_create("/src", "text/plain", "abc"));
  ASSERT_TRUE(a.locate(1, 3, disk_location{4, 40, 0, 17}));
  create_command f = make_create("/fork", "", "de");
  f.fork = resolve_fork(a, "/src", std::nullopt);
  ASSERT_EQ(a.create(f).code, errc::ok);
  (void)a.remove(delete_command{"/src", t0});
  ASSERT_EQ(a.head("/src", t0).code, errc::gone);

  state_machine b;
  ASSERT_TRUE(b.restore(as_span(a.snapshot())).has_value());
  EXPECT_EQ(b.head("/src", t0).code, errc::gone);
  EXPECT_EQ(b.referenced_segments(0), std::vector<std::uint64_t>{4});
  ASSERT_EQ(b.forks_to_stitch().size(), 1u);
  b.stitch_fork("/fork", b.log_of("/src"));  // as recovery does: the soft-deleted source is kept
  read_result fork = b.read("/fork", std::nullopt, 100);
  ASSERT_EQ(fork.plan.slices.size(), 2u);
  EXPECT_TRUE(fork.plan.slices[0].cold());
  EXPECT_EQ(fork.plan.slices[0].at, (disk_location{4, 40, 0, 17}));
  EXPECT_EQ(fork.plan.slices[1].view(), "de");  // never located: inlined, restored hot
  EXPECT_EQ(b.forks().size(), 1u);
  EXPECT_EQ(b.create(f).code, errc::ok);  // the fork's origin is kept for idempotent PUTs

  outcome del = b.remove(delete_command{"/fork", t0});
  ASSERT_EQ(sources(del.release), std::vector<std::string>{"/src"});
  outcome rel = b.fork_release(fork_release_command{"/src"});
  EXPECT_EQ(rel.removed, std::vector<std::string>{"/src"});
  EXPECT_EQ(b.size(), 0u);
  EXPECT_TRUE(b.referenced_segments(0).empty());
}

TEST(snapshot, restored_forks_wait_for_their_stitch_and_hold_only_their_own_records) {
  state_machine a;
  (void)a.create(make_create("/src", "text/plain", "abcdef"));
  create_command f = make_create("/fork", "", "X");
  f.fork = resolve_fork(a, "/src", 4);
  ASSERT_EQ(a.create(f).code, errc::ok);
  ASSERT_TRUE(a.forks_to_stitch().empty());  // linked at creation
  state_machine b;
  ASSERT_TRUE(b.restore(as_span(a.snapshot())).has_value());
  auto marked = b.forks_to_stitch();
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_EQ(marked[0].point.value(), 4u);
  EXPECT_EQ(b.records_held("/fork"), 1u);  // "X" only: the blob does not repeat the source's records
  b.stitch_fork("/fork", b.log_of("/src"));
  EXPECT_TRUE(b.forks_to_stitch().empty());
  std::string all;
  for (const auto& s : b.read("/fork", std::nullopt, 100).plan.slices) all.append(s.view());
  EXPECT_EQ(all, "abcdX");
}

// --- damaged blobs ---

TEST(snapshot, every_truncation_of_a_snapshot_is_rejected) {
  state_machine a;
  (void)a.create(make_create("/src", "application/json", "1,2,"));
  ASSERT_TRUE(a.locate(1, 4, disk_location{2, 40, 1, 9}));
  append_command w = make_append("/src", "3,");
  w.body.messages = 1;
  w.producer = producer_ref{"p", 1, 0};
  w.stream_seq = "a";
  (void)a.append(w);
  create_command f = make_create("/fork", "");
  f.fork = resolve_fork(a, "/src", 4);
  f.expiry.ttl_seconds = 30;
  (void)a.create(f);
  const std::vector<std::byte> blob = a.snapshot();
  ASSERT_GT(blob.size(), 60u);
  for (std::size_t n = 0; n < blob.size(); ++n) {
    state_machine b;
    status s = b.restore(std::span<const std::byte>(blob.data(), n));
    ASSERT_FALSE(s.has_value()) << "prefix of " << n << " bytes";
    EXPECT_EQ(s.err().as<codec_errc>(), codec_errc::truncated) << n << ": " << s.err().reason;
    EXPECT_EQ(b.size(), 0u);
  }
  std::vector<std::byte> longer = blob;
  longer.push_back(std::byte{0});
  state_machine b;
  status s = b.restore(as_span(longer));
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.err().as<codec_errc>(), codec_errc::bad_value);
}

TEST(snapshot, a_wrong_magic_or_an_unknown_version_is_a_bad_value) {
  state_machine a;
  (void)a.create(make_create("/s", "text/plain", "x"));
  std::vector<std::byte> blob = a.snapshot();
  std::vector<std::byte> magic = blob;
  magic[0] = std::byte{'X'};
  std::vector<std::byte> version = blob;
  version[8] = std::byte{99};  // no such version
  for (const auto& bad : {magic, version}) {
    state_machine b;
    status s = b.restore(as_span(bad));
    ASSERT_FALSE(s.has_value());
    EXPECT_EQ(s.err().as<codec_errc>(), codec_errc::bad_value) << s.err().reason;
  }
}

// A hand-built blob of one stream "/s" (generation 1, next generation `next_gen`) with `records`
// inlined records (end, bytes), in the format of `version` (1: a fork lists its inherited records too
// and has a "to stitch" flag).
std::vector<std::byte> one_stream_blob(std::uint64_t next_gen,
                                       const std::vector<std::pair<std::uint64_t, std::string>>& records,
                                       std::optional<std::uint64_t> fork_point = std::nullopt,
                                       std::uint64_t version = 1) {
  wire::writer w;
  w.raw("weirsnap");
  w.var(version);
  w.var(next_gen);
  w.var(1);
  w.str("/s");
  w.var(1);
  w.str("text/plain");
  w.exp({});
  w.exp({});
  w.boolean(false);
  w.svar(t0);
  w.boolean(false);
  w.var(0);
  w.boolean(fork_point.has_value());
  if (fork_point) {
    w.str("/src");
    w.boolean(false);
    w.var(0);
    w.var(*fork_point);
    w.str("text/plain");
    w.exp({});
    w.boolean(true);
    if (version == 1) w.boolean(false);
  }
  w.boolean(false);
  w.boolean(false);
  w.var(0);
  w.var(records.size());
  for (const auto& [end, data] : records) {
    w.var(end);
    w.var(data.size());
    w.var(0);
    w.u8(1);
    w.raw(data);
  }
  return to_bytes(w.take());
}

TEST(snapshot, impossible_logs_and_generations_are_bad_values) {
  {
    state_machine b;  // the hand-built blob itself is fine
    status s = b.restore(as_span(one_stream_blob(2, {{3, "abc"}, {5, "de"}})));
    ASSERT_TRUE(s.has_value()) << s.err().reason;
    std::string all;
    for (const auto& sl : b.read("/s", std::nullopt, 100).plan.slices) all.append(sl.view());
    EXPECT_EQ(all, "abcde");
  }
  {
    // Version 1: a fork at 3 with inherited records and its own. The inherited ones are dropped (the
    // source has them); the fork waits for its link.
    state_machine b;
    ASSERT_TRUE(b.restore(as_span(one_stream_blob(2, {{3, "abc"}, {5, "de"}}, 3))).has_value());
    EXPECT_EQ(b.records_held("/s"), 1u);
    EXPECT_EQ(b.forks_to_stitch().size(), 1u);
    std::string all;
    for (const auto& sl : b.read("/s", stream_offset(3), 100).plan.slices) all.append(sl.view());
    EXPECT_EQ(all, "de");
  }
  {
    state_machine b;  // version 2: the same fork lists only its own records
    ASSERT_TRUE(b.restore(as_span(one_stream_blob(2, {{5, "de"}}, 3, 2))).has_value());
    EXPECT_EQ(b.records_held("/s"), 1u);
    EXPECT_EQ(b.head("/s", t0).meta->tail.value(), 5u);
  }
  const std::vector<std::vector<std::byte>> bad = {
      one_stream_blob(1, {{3, "abc"}}),                   // generation not below the next one
      one_stream_blob(0, {}),                             // next generation 0
      one_stream_blob(2, {{4, "abc"}}),                   // does not start at 0
      one_stream_blob(2, {{3, "abc"}, {6, "de"}}),        // a hole
      one_stream_blob(2, {{3, "abc"}, {4, "de"}}),        // an overlap
      one_stream_blob(2, {{2, "abc"}}),                   // ends before it begins
      one_stream_blob(2, {{0, ""}}),                      // empty record
      one_stream_blob(2, {{3, "abc"}, {5, "de"}}, 4),     // a record across the fork point
      one_stream_blob(2, {{3, "abc"}}, 5),                // inherited records end before the fork point
      one_stream_blob(2, {{7, "abc"}}, 5),                // own records after a gap
      one_stream_blob(2, {{3, "abc"}, {5, "de"}}, 3, 2),  // version 2: inherited records listed
      one_stream_blob(2, {{4, "abc"}}, 3, 2),             // version 2: own records not at the fork point
      one_stream_blob(2, {{4, "abc"}}, std::nullopt, 2),  // version 2: does not start at 0
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    state_machine b;
    status s = b.restore(as_span(bad[i]));
    ASSERT_FALSE(s.has_value()) << "case " << i;
    EXPECT_EQ(s.err().as<codec_errc>(), codec_errc::bad_value) << "case " << i << ": " << s.err().reason;
    EXPECT_EQ(b.size(), 0u);
  }
}

TEST(snapshot, random_bytes_are_rejected_and_mutations_never_crash) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> junk(rng() % 200);
    for (auto& b : junk) b = static_cast<std::byte>(rng());
    state_machine b;
    EXPECT_FALSE(b.restore(as_span(junk)).has_value());
  }
  // Flipped bytes in a real snapshot: rejected, or (a flip inside a string, say) accepted as a state
  // that snapshots and restores again like any other.
  random_driver d(3);
  state_machine a;
  for (int i = 0; i < 200; ++i) d.step({&a});
  const std::vector<std::byte> blob = a.snapshot();
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::byte> m = blob;
    for (unsigned k = 0, n = 1 + static_cast<unsigned>(rng() % 3); k < n; ++k) {
      m[rng() % m.size()] = static_cast<std::byte>(rng());
    }
    state_machine b;
    status s = b.restore(as_span(m));
    if (!s.has_value()) {
      ++rejected;
      EXPECT_EQ(b.size(), 0u);
      continue;
    }
    state_machine c;
    status again = c.restore(as_span(b.snapshot()));
    ASSERT_TRUE(again.has_value()) << again.err().reason;
    EXPECT_EQ(c.snapshot(), b.snapshot());
  }
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace weir::streams

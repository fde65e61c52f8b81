// The log op-fuzzer: random append / roll / checkpoint / fault / crash / recover sequences on mem_env,
// checked against a model. After every recovery:
//   * every acknowledged record is present, exactly once, in order, at the lsn its ack named;
//   * every record present was appended by us (no foreign bytes), none whose append failed, and records
//     appear in the order they were appended (lsns contiguous: recovery checks that itself);
//   * checkpoint + replay gives the same sequence as the full log would;
//   * no segment a checkpoint reclaimed comes back, and the records before the checkpoint that still have
//     a segment (kept by a random keep set, or not yet reclaimed) read back by position, intact.
// A checkpoint's reclaim must spare its keep set and every segment holding a record after it.
// Used by log_fuzz_test.cc (fixed seeds, unit) and log_fuzz_slow.cc (many seeds, label slow).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/log.h"
#include "storage/crc32c.h"
#include "storage/log_format.h"
#include "storage/log_writer.h"
#include "storage/segment_reader.h"
#include "test_util.h"

namespace weir::storage::testing {

struct fuzz_stats {
  std::uint64_t ops = 0, appends = 0, acked = 0, failed = 0, crashes = 0, torn_crashes = 0, restarts = 0,
                checkpoints = 0, segments_max = 0, kept = 0, reclaimed = 0, reads_by_position = 0;
};

class log_fuzzer {
 public:
  explicit log_fuzzer(std::uint64_t seed) : seed_(seed), rng_(seed) {
    log::set_level("error");  // torn tails and failed batches are routine here; keep the output readable
  }

  // Runs `ops` random operations; stops at the first failed check (gtest assertions record it).
  fuzz_stats run(int ops) {
    restart_epoch();
    for (int i = 0; i < ops && !::testing::Test::HasFatalFailure(); ++i) {
      ++stats_.ops;
      int pick = uniform(0, 99);
      if (pick < 45) {
        append_burst();
      } else if (pick < 60) {
        drain(uniform(0, 1) == 0);
      } else if (pick < 67) {
        take_checkpoint();
      } else if (pick < 75) {
        inject_fault();
      } else if (pick < 80) {
        clear_faults();
      } else if (pick < 90) {
        crash();
      } else {
        clean_restart();
      }
    }
    if (!::testing::Test::HasFatalFailure()) clean_restart();
    return stats_;
  }

 private:
  enum class fate { pending, acked, failed };
  // A record's signature: its unique id and the CRC of its payload (so a damaged payload shows).
  using sig = std::uint64_t;

  static sig signature(std::span<const std::byte> payload) {
    std::string_view text(reinterpret_cast<const char*>(payload.data()), payload.size());
    std::uint64_t id = 0xFFFFFFFF;  // "foreign" unless it parses as one of ours
    if (text.size() > 1 && text[0] == 'p') {
      auto colon = text.find(':');
      if (colon != std::string_view::npos)
        id = std::strtoull(std::string(text.substr(1, colon - 1)).c_str(), nullptr, 10);
    }
    return (id << 32) | crc32c(payload);
  }
  static std::uint64_t id_of(sig s) { return s >> 32; }
  static std::uint64_t mix(std::uint64_t h, sig s) {
    return (h ^ s) * 0x100000001B3ull + 0x9E3779B97F4A7C15ull;
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::string where() const { return "seed " + std::to_string(seed_) + " op " + std::to_string(stats_.ops); }

  std::string make_payload(std::uint64_t id) {
    // Unique id first, then filler; some large ones to force rolls mid-batch.
    std::string p = "p" + std::to_string(id) + ":";
    int len = uniform(0, 9) == 0 ? uniform(200, 3000) : uniform(0, 120);
    for (int i = 0; i < len; ++i) p.push_back(static_cast<char>('a' + uniform(0, 25)));
    return p;
  }

  void push_log(sig s, log_position p) {
    log_.push_back(s);
    pos_.push_back(p);
    prefix_hash_.push_back(mix(prefix_hash_.back(), s));
  }

  void append_burst() {
    int n = uniform(1, 20);
    for (int i = 0; i < n; ++i) {
      std::uint64_t id = next_id_++;
      std::string p = make_payload(id);
      sig s = signature(bytes_of(p));
      issued_.push_back(s);
      fates_[id] = fate::pending;
      ++outstanding_;
      ++stats_.appends;
      // lone: the inline path (log_options::inline_after) when the sync thread happens to be idle.
      writer_->append(
          static_cast<std::uint8_t>(uniform(1, 255)), bytes_of(p),
          [this, s](result<append_ack> r) { on_ack(s, std::move(r)); }, n == 1 || uniform(0, 3) == 0);
    }
    if (uniform(0, 2) == 0) queue_->run_ready();
  }

  void on_ack(sig s, result<append_ack> r) {
    --outstanding_;
    if (!r) {
      auto code = errc_of(r.err());
      EXPECT_TRUE(code == errc::no_space || code == errc::io_error || code == errc::poisoned)
          << where() << ": unexpected error " << r.err().reason;
      // poisoned: the outcome is unknown (the undo failed), so the record may still turn up.
      if (code == errc::poisoned) return;
      fates_[id_of(s)] = fate::failed;
      ++stats_.failed;
      return;
    }
    fates_[id_of(s)] = fate::acked;
    ++stats_.acked;
    push_log(s, r->pos);
    EXPECT_EQ(r->seq.value(), log_.size()) << where() << ": acks come in lsn order, without gaps";
    stats_.segments_max = std::max(stats_.segments_max, r->pos.segment.value());
  }

  void drain(bool all) {
    if (all) {
      ASSERT_TRUE(queue_->run_until([&] { return outstanding_ == 0 && checkpoint_pending_ == 0; }))
          << where();
    } else {
      queue_->run_ready();
    }
  }

  void take_checkpoint() {
    if (log_.empty() || checkpoint_pending_ > 0) return;
    // The "state machine state" after lsn C: a digest of the first C records.
    std::string blob = std::to_string(log_.size()) + " " + std::to_string(prefix_hash_.back());
    // Keep a random part of the segments that hold records the checkpoint covers (the cold store's
    // references), now and then an id that does not exist.
    const std::uint64_t covered = log_.size();
    std::vector<segment_id> keep;
    std::set<std::uint64_t> candidates;
    for (std::size_t l = 0; l < covered; ++l) {
      if (!gone_.contains(pos_[l].segment.value())) candidates.insert(pos_[l].segment.value());
    }
    for (std::uint64_t id : candidates) {
      if (uniform(0, 2) == 0) keep.push_back(segment_id{id});
    }
    if (uniform(0, 9) == 0) keep.push_back(segment_id{1000000});
    stats_.kept += keep.size();
    ++checkpoint_pending_;
    ++stats_.checkpoints;
    writer_->checkpoint(lsn{covered}, bytes_of(blob), keep,
                        [this, covered, keep](result<std::vector<segment_id>> r) {
                          --checkpoint_pending_;
                          on_checkpoint(covered, keep, std::move(r));
                        });
  }

  void on_checkpoint(std::uint64_t covered, const std::vector<segment_id>& keep,
                     result<std::vector<segment_id>> r) {
    if (!r) {
      auto code = errc_of(r.err());
      EXPECT_TRUE(code == errc::no_space || code == errc::io_error) << where() << ": " << r.err().reason;
      return;
    }
    std::set<std::uint64_t> removed;
    for (segment_id id : *r) {
      EXPECT_TRUE(std::find(keep.begin(), keep.end(), id) == keep.end())
          << where() << ": kept segment " << id.value() << " reclaimed";
      EXPECT_FALSE(env_.file_exists(segment_path(id))) << where() << ": reported reclaimed, still there";
      removed.insert(id.value());
      gone_.insert(id.value());
      ++stats_.reclaimed;
    }
    for (std::size_t l = covered; l < pos_.size(); ++l) {
      ASSERT_FALSE(removed.contains(pos_[l].segment.value()))
          << where() << ": segment " << pos_[l].segment.value() << " reclaimed with lsn " << l + 1
          << " (after the checkpoint at " << covered << ") in it";
    }
    // The kept segments are still there, their records readable where their acks said.
    for (std::size_t l = 0; l < covered; ++l) {
      if (std::find(keep.begin(), keep.end(), pos_[l].segment) == keep.end()) continue;
      ASSERT_TRUE(env_.file_exists(segment_path(pos_[l].segment))) << where();
      if (uniform(0, 3) == 0) check_record_at(l);
    }
  }

  std::string segment_path(segment_id id) const { return join_path(dir_, format::segment_file_name(id)); }

  // Reads lsn l + 1 back by its position and compares it with the model.
  void check_record_at(std::size_t l) {
    segment_reader reader(env_, dir_);
    auto rec = reader.read_record(pos_[l]);
    ASSERT_TRUE(rec) << where() << ": lsn " << l + 1 << " unreadable: " << rec.err().reason;
    EXPECT_EQ(rec->seq.value(), l + 1) << where();
    EXPECT_EQ(signature(rec->payload), log_[l]) << where() << ": lsn " << l + 1 << " differs by position";
    const std::uint64_t from = rec->payload.size() / 3;
    auto part = reader.read_data(pos_[l], from, rec->payload.size() - from);
    ASSERT_TRUE(part) << where() << ": " << part.err().reason;
    EXPECT_EQ(*part, string_of(std::span(rec->payload).subspan(from))) << where();
    ++stats_.reads_by_position;
  }

  void inject_fault() {
    switch (uniform(0, 2)) {
      case 0:
        env_.set_capacity(env_.used_bytes() + static_cast<std::uint64_t>(uniform(0, 400)));
        break;
      case 1:
        env_.fail_next_syncs(uniform(1, 2));
        break;
      case 2:
        env_.set_write_error(true);
        break;
    }
  }

  void clear_faults() {
    env_.set_capacity(std::nullopt);
    env_.fail_next_syncs(0);
    env_.set_write_error(false);
  }

  void crash() {
    ++stats_.crashes;
    std::optional<std::uint64_t> torn;
    if (uniform(0, 1) == 0) {
      torn = rng_();
      ++stats_.torn_crashes;
    }
    // From here on the old epoch's completions are never run: only acks seen before the crash count.
    env_.crash(torn);
    writer_.reset();  // the "dead process": every env call fails while halted
    queue_.reset();
    env_.restart();
    restart_epoch();
  }

  void clean_restart() {
    ++stats_.restarts;
    writer_.reset();  // writes and completes everything queued
    queue_->run_ready();
    EXPECT_EQ(outstanding_, 0) << where() << ": a clean stop completes every append";
    queue_.reset();
    restart_epoch();
  }

  // Recovers, checks the result against the model, and opens a fresh writer.
  void restart_epoch() {
    clear_faults();
    std::vector<sig> replayed;
    std::vector<log_position> replayed_at;
    auto rec = recover_log(env_, dir_, [&](const record_view& v) -> status {
      replayed.push_back(signature(v.payload));
      replayed_at.push_back(v.pos);
      return {};
    });
    ASSERT_TRUE(rec) << where() << ": recovery failed: " << rec.err().reason;
    std::uint64_t covered = 0;
    if (rec->latest_checkpoint) {
      std::istringstream in(string_of(rec->latest_checkpoint->blob));
      std::uint64_t hash = 0;
      in >> covered >> hash;
      ASSERT_EQ(covered, rec->latest_checkpoint->covered.value()) << where();
      ASSERT_LE(covered, log_.size()) << where() << ": checkpoint beyond what was acknowledged";
      ASSERT_EQ(hash, prefix_hash_[covered]) << where() << ": checkpoint state differs from the acked prefix";
    }
    check(covered, replayed);
    if (::testing::Test::HasFatalFailure()) return;

    // Everything recovered is now settled history.
    log_.resize(covered);
    pos_.resize(covered);
    prefix_hash_.resize(covered + 1);
    for (std::size_t i = 0; i < replayed.size(); ++i) push_log(replayed[i], replayed_at[i]);

    // No reclaimed segment came back (mem_env's removals are durable); from now on every id the log
    // used and no longer has counts as gone (a checkpoint whose completion the crash swallowed).
    std::set<std::uint64_t> present;
    for (const auto& seg : rec->segments) {
      ASSERT_FALSE(gone_.contains(seg.id.value()))
          << where() << ": reclaimed segment " << seg.id.value() << " is back";
      present.insert(seg.id.value());
    }
    for (std::uint64_t id = 1; id < rec->next_segment.value(); ++id) {
      if (!present.contains(id)) gone_.insert(id);
    }
    // Records the checkpoint covers, in segments still there (probed, not scanned), read back by position.
    for (int n = 0; n < 8 && covered > 0; ++n) {
      std::size_t l = static_cast<std::size_t>(uniform(0, static_cast<int>(covered) - 1));
      if (present.contains(pos_[l].segment.value())) check_record_at(l);
      if (::testing::Test::HasFatalFailure()) return;
    }
    issued_.clear();
    fates_.clear();
    outstanding_ = 0;
    checkpoint_pending_ = 0;

    queue_ = std::make_unique<completion_queue>();
    log_options opts;
    opts.segment_bytes = static_cast<std::uint64_t>(uniform(150, 4000));
    opts.inline_after = static_cast<unsigned>(uniform(0, 2));
    // Prepared segments (zeros renamed into place and written over) in half the epochs.
    opts.prepare_segments = uniform(0, 1) == 1;
    opts.prepared_first_bytes = static_cast<std::uint64_t>(uniform(100, 2000));
    auto w = log_writer::open(env_, dir_, opts, *rec, queue_->exec());
    ASSERT_TRUE(w) << where() << ": open failed: " << w.err().reason;
    writer_ = std::move(*w);
  }

  // `replayed` holds the records after lsn `covered`.
  void check(std::uint64_t covered, const std::vector<sig>& replayed) {
    // Everything acknowledged (log_ holds the acked records in lsn order) is there, in place.
    ASSERT_GE(covered + replayed.size(), log_.size()) << where() << ": acknowledged records lost";
    for (std::size_t l = covered; l < log_.size(); ++l) {
      ASSERT_EQ(replayed[l - covered], log_[l]) << where() << ": lsn " << l + 1 << " differs from its ack";
    }
    // The rest: records of this epoch still in flight at the crash, in append order, none failed.
    std::size_t cursor = 0;
    for (std::size_t l = std::max<std::size_t>(log_.size(), covered); l < covered + replayed.size(); ++l) {
      sig s = replayed[l - covered];
      auto it = fates_.find(id_of(s));
      ASSERT_NE(it, fates_.end()) << where() << ": foreign record at lsn " << l + 1;
      ASSERT_EQ(it->second, fate::pending) << where() << ": lsn " << l + 1 << " holds a record that "
                                           << (it->second == fate::failed ? "failed" : "was acked elsewhere");
      while (cursor < issued_.size() && issued_[cursor] != s) ++cursor;
      ASSERT_LT(cursor, issued_.size())
          << where() << ": record out of append order (or damaged) at lsn " << l + 1;
      ++cursor;
    }
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  mem_env env_;
  const std::string dir_ = "/fuzz/core-0";
  std::unique_ptr<completion_queue> queue_;
  std::unique_ptr<log_writer> writer_;

  std::vector<sig> log_;                           // acknowledged, in lsn order (lsn = index + 1)
  std::vector<log_position> pos_;                  // where each of log_ is on disk
  std::set<std::uint64_t> gone_;                   // segment ids reclaimed (or otherwise no longer there)
  std::vector<std::uint64_t> prefix_hash_{0};      // digest of log_[0, i)
  std::vector<sig> issued_;                        // appended in this epoch, in order
  std::unordered_map<std::uint64_t, fate> fates_;  // by id, this epoch
  int outstanding_ = 0;
  int checkpoint_pending_ = 0;
  std::uint64_t next_id_ = 1;
  fuzz_stats stats_;
};

}  // namespace weir::storage::testing

// crash_model: what the crash-test clients sent and what the server acknowledged, per stream, across
// every kill/restart cycle of one run. The load writes it (several threads, one mutex per stream); the
// verifier reads it after a restart and resolves the requests whose outcome the kill left unknown.
//
// Record framing, so that a read-back can be split into appends without trusting the server:
//   bytes streams: "[s<stream> w<writer> n<seq> l<payload length>]" then the payload (random bytes);
//   JSON streams:  each message is {"k":"s<stream>/w<writer>/n<seq>/i<index>","p":"<text>"}, sent alone or
//                  as an array (flattened one level, PROTOCOL.md 9.1.2).
// Writer sequence numbers are unique per writer across the whole run, so every append is identifiable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir::crash_test {

enum class outcome : std::uint8_t {
  pending,  // sent, no answer before the kill: may be present or absent after restart, but whole and once
  acked,    // acknowledged by the server: must be present, exactly once, where the ack said
  present,  // was pending and was found after a restart: from then on it must stay
  absent,   // was pending (or refused) and was not found: must never appear later
};

inline const char* outcome_name(outcome o) {
  switch (o) {
    case outcome::pending:
      return "unacknowledged";
    case outcome::acked:
      return "acknowledged";
    case outcome::present:
      return "unacknowledged, found after restart";
    case outcome::absent:
      return "unacknowledged, absent after restart";
  }
  return "?";
}
inline bool must_exist(outcome o) {
  return o == outcome::acked || o == outcome::present;
}

enum class stream_kind : std::uint8_t { bytes, json };

struct append_record {
  std::uint32_t writer = 0;
  std::uint64_t seq = 0;              // unique per writer in the run
  std::string body;                   // the request body exactly as sent
  std::vector<std::string> messages;  // JSON: the messages as sent (compact), in order
  bool closes = false;                // sent with Stream-Closed: true (append and close, 4.1)
  bool producer = false;              // sent with Producer-Id/Epoch/Seq (5.2.1)
  std::uint64_t epoch = 0;
  std::uint64_t producer_seq = 0;
  outcome state = outcome::pending;
  std::string ack_offset;  // Stream-Next-Offset of the acknowledgement
  int cycle = 0;           // load cycle that sent it

  // Filled by each verification: where the append ends in the read-back (byte or message position).
  bool found = false;
  std::size_t end = 0;
};

struct stream_model {
  int id = 0;
  std::string path;  // URL path, e.g. /crash/s12
  stream_kind kind = stream_kind::bytes;
  int owner = -1;  // writer that owns it; -1: shared by all writers
  outcome created = outcome::pending;
  std::string create_offset;
  int cycle_created = 0;

  // Forks (4.2): the source stream and the append of the source whose ack offset is the fork offset.
  int source = -1;
  std::size_t fork_after = 0;  // index into the source's appends
  std::string fork_offset;

  // Producer stream (5.2.1): one producer id per stream.
  std::string producer_id;

  // Close (5.3, or append-and-close 5.2): requested at most once; the record index when it carried a body.
  std::optional<outcome> close;
  std::optional<std::size_t> close_record;
  int close_cycle = 0;

  mutable std::mutex mu;  // guards appends and the fields above while the load runs
  std::deque<append_record> appends;

  // The last verified read-back (must stay a prefix of every later one: bytes never move).
  bool verified = false;
  std::string content;                // bytes streams
  std::vector<std::string> messages;  // JSON streams, each message minified

  bool usable() const { return must_exist(created) && !close.has_value(); }
};

// Every stream of the run. Streams are added under a lock and never removed, so pointers stay valid.
class crash_model {
 public:
  stream_model& add_stream(stream_kind kind, int owner, int cycle) {
    std::lock_guard lock(mu_);
    auto s = std::make_unique<stream_model>();
    s->id = static_cast<int>(streams_.size());
    s->path = "/crash/s" + std::to_string(s->id);
    s->kind = kind;
    s->owner = owner;
    s->cycle_created = cycle;
    streams_.push_back(std::move(s));
    return *streams_.back();
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return streams_.size();
  }
  stream_model& at(std::size_t i) {
    std::lock_guard lock(mu_);
    return *streams_[i];
  }
  std::vector<stream_model*> all() {
    std::lock_guard lock(mu_);
    std::vector<stream_model*> out;
    for (auto& s : streams_) out.push_back(s.get());
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::deque<std::unique_ptr<stream_model>> streams_;
};

// Problems found by a cycle, grouped so that a run against a server that loses everything still reads
// as a short summary ("412 acknowledged appends lost") followed by the first examples.
class problem_log {
 public:
  void add(const std::string& category, std::string text) {
    std::lock_guard lock(mu_);
    auto& c = categories_[category];
    ++c.count;
    if (c.examples.size() < 8) c.examples.push_back(std::move(text));
  }
  // Counts without examples (e.g. the acknowledged appends inside a stream that is gone altogether).
  void count(const std::string& category, std::size_t n) {
    if (n == 0) return;
    std::lock_guard lock(mu_);
    categories_[category].count += n;
  }
  bool empty() const {
    std::lock_guard lock(mu_);
    return categories_.empty();
  }
  std::string summary() const {
    std::lock_guard lock(mu_);
    std::string s;
    for (const auto& [cat, c] : categories_) s += "  " + std::to_string(c.count) + " x " + cat + "\n";
    for (const auto& [cat, c] : categories_) {
      if (c.examples.empty()) continue;
      s += "[" + cat + "], first " + std::to_string(c.examples.size()) + ":\n";
      for (const auto& e : c.examples) s += "    " + e + "\n";
    }
    return s;
  }

 private:
  struct category_stats {
    std::size_t count = 0;
    std::vector<std::string> examples;
  };
  mutable std::mutex mu_;
  std::map<std::string, category_stats> categories_;
};

}  // namespace weir::crash_test

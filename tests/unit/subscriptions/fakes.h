// Test doubles for the subscription_manager: a scheduler whose timers fire when the manual clock moves,
// an in-memory stream_host, and a webhook transport that records requests for the test to answer.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "subscriptions/subscription_manager.h"

namespace weir::subscriptions::testing {

class fake_scheduler final : public scheduler {
 public:
  explicit fake_scheduler(manual_clock& clock) : clock_(clock) {}

  void post(std::function<void()> fn) override { posted_.push_back(std::move(fn)); }
  std::uint64_t add_timer(std::int64_t delay_ms, std::function<void()> fn) override {
    std::uint64_t id = next_id_++;
    timers_[id] = timer{clock_.mono_ms() + delay_ms, std::move(fn)};
    return id;
  }
  void cancel_timer(std::uint64_t id) override { timers_.erase(id); }

  // Runs posted tasks until none is left (bounded).
  void drain() {
    for (int i = 0; i < 10'000 && !posted_.empty(); ++i) {
      auto fn = std::move(posted_.front());
      posted_.pop_front();
      fn();
    }
  }
  // Moves time forward in 1 ms steps, firing due timers and draining posts.
  void advance(std::int64_t ms) {
    drain();
    for (std::int64_t i = 0; i < ms; ++i) {
      clock_.advance(millis(1));
      fire_due();
      drain();
    }
  }
  std::size_t timer_count() const { return timers_.size(); }

 private:
  struct timer {
    std::int64_t deadline;
    std::function<void()> fn;
  };
  void fire_due() {
    for (bool fired = true; fired;) {
      fired = false;
      for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->second.deadline <= clock_.mono_ms()) {
          auto fn = std::move(it->second.fn);
          timers_.erase(it);
          fn();
          fired = true;
          break;
        }
      }
    }
  }

  manual_clock& clock_;
  std::deque<std::function<void()>> posted_;
  std::map<std::uint64_t, timer> timers_;
  std::uint64_t next_id_ = 1;
};

// Streams by full path; offsets are "<16 digits>_<16 digits>" like the server's.
class fake_host final : public stream_host {
 public:
  static std::string offset(int n) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%016d_%016d", 0, n);
    return buf;
  }

  void list_streams(std::string prefix, std::function<void(std::vector<stream_info>)> done) override {
    std::vector<stream_info> out;
    for (const auto& [path, s] : streams) {
      if (path.compare(0, prefix.size(), prefix) == 0) out.push_back(s);
    }
    done(std::move(out));
  }
  void get_stream(std::string path, std::function<void(std::optional<stream_info>)> done) override {
    auto it = streams.find(path);
    done(it == streams.end() ? std::nullopt : std::optional<stream_info>(it->second));
  }
  void append_json(std::string path, std::string body,
                   std::function<void(result<std::string>)> done) override {
    auto it = streams.find(path);
    if (it == streams.end()) {
      done(error{1, "no such stream"});
      return;
    }
    appended[path].push_back(body);
    it->second.tail_offset = offset(++lengths[path]);
    done(it->second.tail_offset);
  }

  // Adds or grows a stream; returns its info as an event would report it.
  stream_info put(const std::string& path, int length) {
    lengths[path] = length;
    streams[path] = stream_info{path, offset(length), "application/json"};
    return streams[path];
  }

  std::map<std::string, stream_info> streams;
  std::map<std::string, int> lengths;
  std::map<std::string, std::vector<std::string>> appended;
};

class fake_transport final : public webhook_transport {
 public:
  struct pending {
    webhook_request req;
    std::function<void(webhook_result)> done;
  };
  void send(webhook_request req, std::function<void(webhook_result)> done) override {
    sent.push_back(pending{std::move(req), std::move(done)});
  }
  void shutdown() override {}

  // Answers the oldest unanswered request.
  void answer(int status, std::string body = "{}") {
    auto done = sent.at(answered++).done;
    done(webhook_result{status, std::move(body), status ? "" : "connection refused"});
  }
  std::size_t unanswered() const { return sent.size() - answered; }

  std::vector<pending> sent;
  std::size_t answered = 0;
};

}  // namespace weir::subscriptions::testing

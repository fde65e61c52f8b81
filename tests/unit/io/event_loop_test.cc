// The timer facility and the cross-core task queue of io::event_loop.
#include "io/event_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iterator>
#include <thread>
#include <vector>

namespace weir::io {
namespace {

using namespace std::chrono_literals;

// Runs a loop on its own thread for the duration of a test.
struct loop_thread {
  event_loop loop{3};
  std::thread t{[this] { loop.run(); }};
  ~loop_thread() {
    loop.stop();
    t.join();
  }
  // Runs fn on the loop and waits for it.
  template <class F>
  void sync(F fn) {
    std::atomic<bool> done{false};
    loop.post([&] {
      fn();
      done = true;
    });
    for (int i = 0; i < 5000 && !done; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(done.load());
  }
};

bool wait_until(const std::atomic<bool>& flag) {
  for (int i = 0; i < 5000 && !flag; ++i) std::this_thread::sleep_for(1ms);
  return flag.load();
}

TEST(event_loop, current_and_index_on_the_loop_thread) {
  loop_thread lt;
  EXPECT_EQ(event_loop::current(), nullptr);
  event_loop* seen = nullptr;
  lt.sync([&] { seen = event_loop::current(); });
  EXPECT_EQ(seen, &lt.loop);
  EXPECT_EQ(lt.loop.index(), 3u);
}

// A turn that holds the loop for longer than slow_turn_ms is counted (and logged), with its length.
TEST(event_loop, a_slow_turn_is_counted_with_its_length) {
  loop_thread lt;
  const std::uint64_t before = lt.loop.slow_turns();
  // The sleep is the slow turn under test (a task holding the loop), not a wait for an event.
  lt.sync([] { std::this_thread::sleep_for(std::chrono::milliseconds(event_loop::slow_turn_ms + 50)); });
  // The count is taken at the end of the turn that ran the task: one more turn makes sure it ended.
  lt.sync([] {});
  EXPECT_GE(lt.loop.slow_turns(), before + 1);
  EXPECT_GE(lt.loop.longest_turn_ms(), event_loop::slow_turn_ms + 50);
}

// A turn that holds the loop past a lag probe's due time shows up in lag_us() as that probe's lateness.
TEST(event_loop, a_turn_that_holds_the_loop_shows_as_loop_lag) {
  loop_thread lt;
  static constexpr std::int64_t hold_ms = 2 * event_loop::lag_probe_us / 1000 + 20;
  // A probe falls due at most lag_probe_us (and a millisecond of rounding) into the hold, so it runs at
  // least hold - lag_probe_us - 1 ms late: above 20 ms. The sleep is the turn under test (a task
  // holding the loop), not a wait for an event.
  lt.sync([] { std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms)); });
  lt.sync([] {});  // the probe is read at the start of the turn after the hold
  const metrics::histogram_counts c = lt.loop.lag_us().read();
  std::uint64_t above_20ms = 0;
  for (std::size_t i = 0; i < c.counts.size(); ++i) {
    if (i == std::size(metrics::latency_us_bounds) || metrics::latency_us_bounds[i] > 20'000) {
      above_20ms += c.counts[i];
    }
  }
  EXPECT_GE(above_20ms, 1u);
  EXPECT_GE(c.sum, 20'000u);
}

TEST(event_loop, timers_fire_in_deadline_order) {
  loop_thread lt;
  std::vector<int> order;
  std::atomic<bool> done{false};
  lt.sync([&] {
    lt.loop.add_timer(30ms, [&] { order.push_back(3); });
    lt.loop.add_timer(10ms, [&] { order.push_back(1); });
    lt.loop.add_timer(20ms, [&] { order.push_back(2); });
    lt.loop.add_timer(40ms, [&] { done = true; });
  });
  ASSERT_TRUE(wait_until(done));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(event_loop, timers_with_equal_deadlines_fire_in_creation_order) {
  loop_thread lt;
  std::vector<int> order;
  std::atomic<bool> done{false};
  lt.sync([&] {
    for (int i = 0; i < 5; ++i) lt.loop.add_timer(5ms, [&order, i] { order.push_back(i); });
    lt.loop.add_timer(5ms, [&] { done = true; });
  });
  ASSERT_TRUE(wait_until(done));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(event_loop, cancelled_timer_does_not_fire) {
  loop_thread lt;
  std::atomic<bool> fired{false}, done{false};
  bool first_cancel = false, second_cancel = true;
  lt.sync([&] {
    auto id = lt.loop.add_timer(10ms, [&] { fired = true; });
    EXPECT_NE(id, 0u);
    first_cancel = lt.loop.cancel_timer(id);
    second_cancel = lt.loop.cancel_timer(id);
    lt.loop.add_timer(30ms, [&] { done = true; });
  });
  ASSERT_TRUE(wait_until(done));
  EXPECT_TRUE(first_cancel);
  EXPECT_FALSE(second_cancel);
  EXPECT_FALSE(fired.load());
}

TEST(event_loop, cancel_after_fire_returns_false) {
  loop_thread lt;
  std::atomic<bool> fired{false};
  event_loop::timer_id id = 0;
  lt.sync([&] { id = lt.loop.add_timer(1ms, [&] { fired = true; }); });
  ASSERT_TRUE(wait_until(fired));
  bool cancelled = true;
  lt.sync([&] { cancelled = lt.loop.cancel_timer(id); });
  EXPECT_FALSE(cancelled);
}

TEST(event_loop, now_ms_is_monotonic_and_advances) {
  loop_thread lt;
  std::int64_t a = 0, b = 0;
  lt.sync([&] { a = lt.loop.now_ms(); });
  std::this_thread::sleep_for(20ms);
  lt.sync([&] { b = lt.loop.now_ms(); });
  EXPECT_GE(b - a, 20);
}

TEST(event_loop, posts_from_many_threads_run_fifo_per_sender) {
  loop_thread lt;
  constexpr int senders = 4, per_sender = 2000;
  std::vector<std::vector<int>> seen(senders);  // touched on the loop thread only
  std::atomic<int> total{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s) {
    threads.emplace_back([&, s] {
      for (int i = 0; i < per_sender; ++i) {
        lt.loop.post([&, s, i] {
          seen[s].push_back(i);
          ++total;
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  std::atomic<bool> done{false};
  lt.loop.post([&] { done = true; });
  ASSERT_TRUE(wait_until(done));
  EXPECT_EQ(total.load(), senders * per_sender);
  for (int s = 0; s < senders; ++s) {
    ASSERT_EQ(seen[s].size(), static_cast<std::size_t>(per_sender));
    for (int i = 0; i < per_sender; ++i) ASSERT_EQ(seen[s][i], i);
  }
}

TEST(event_loop, a_burst_of_posts_needs_few_wakeups) {
  loop_thread lt;
  lt.sync([] {});
  std::uint64_t before = lt.loop.wakeups_written();
  std::atomic<int> ran{0};
  constexpr int n = 10'000;
  for (int i = 0; i < n; ++i) lt.loop.post([&] { ++ran; });
  std::atomic<bool> done{false};
  lt.loop.post([&] { done = true; });
  ASSERT_TRUE(wait_until(done));
  EXPECT_EQ(ran.load(), n);
  // The eventfd is written only when the loop sleeps with no wake-up pending: far fewer than one per post.
  EXPECT_LT(lt.loop.wakeups_written() - before, static_cast<std::uint64_t>(n) / 10);
}

TEST(event_loop, post_from_the_loop_itself_runs_later_without_wakeup) {
  loop_thread lt;
  std::vector<int> order;
  std::atomic<bool> done{false};
  lt.sync([&] {
    lt.loop.post([&] {
      order.push_back(2);
      done = true;
    });
    order.push_back(1);
  });
  ASSERT_TRUE(wait_until(done));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(event_loop, the_turn_end_runs_after_the_turns_tasks_and_before_the_next_turn) {
  loop_thread lt;
  std::vector<int> order;
  std::uint64_t task_turn = 0, end_turn = 0, added_turn = 0, next_turn = 0;
  std::atomic<bool> done{false};
  lt.sync([&] {
    task_turn = lt.loop.turn();
    lt.loop.at_turn_end([&] {
      order.push_back(3);
      end_turn = lt.loop.turn();
      lt.loop.at_turn_end([&] {  // added while the turn ends: runs in that same end
        order.push_back(4);
        added_turn = lt.loop.turn();
      });
    });
    lt.loop.post([&] {  // posted from the loop: the next turn
      order.push_back(5);
      next_turn = lt.loop.turn();
      done = true;
    });
    order.push_back(1);
  });
  ASSERT_TRUE(wait_until(done));
  EXPECT_EQ(order, (std::vector<int>{1, 3, 4, 5}));
  EXPECT_EQ(end_turn, task_turn);
  EXPECT_EQ(added_turn, task_turn);
  EXPECT_GT(next_turn, task_turn);
}

TEST(event_loop, the_turn_end_runs_when_the_loop_stops) {
  event_loop loop(0);
  int ran = 0;
  loop.post([&] { loop.at_turn_end([&] { ++ran; }); });
  loop.stop();
  loop.run();
  EXPECT_EQ(ran, 1);
}

TEST(event_loop, stop_from_another_thread_ends_run) {
  event_loop loop(0);
  std::atomic<bool> returned{false};
  std::thread t([&] {
    loop.run();
    returned = true;
  });
  std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(returned.load());
  loop.stop();
  t.join();
  EXPECT_TRUE(returned.load());
}

TEST(event_loop, tasks_posted_before_stop_still_run) {
  event_loop loop(0);
  int ran = 0;
  loop.post([&] { ++ran; });
  loop.stop();
  loop.run();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace weir::io

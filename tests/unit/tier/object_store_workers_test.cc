// object_store_workers: calls run on worker threads; completions run there or on the named event loop;
// a stalled S3 call holds one worker, never a loop or the other workers.
#include "tier/object_store_workers.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "tier/mem_object_store.h"

namespace weir::tier {
namespace {

object_bytes bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return object_bytes(b.begin(), b.end());
}

shared_object_bytes shared_of(std::string_view s) {
  return std::make_shared<const object_bytes>(bytes_of(s));
}

struct loop_thread {
  io::event_loop loop{0};
  std::thread t{[this] { loop.run(); }};
  ~loop_thread() {
    loop.stop();
    t.join();
  }
};

TEST(object_store_workers, completion_runs_on_the_named_loop) {
  mem_object_store fake;
  object_store_workers workers(fake, 2);
  loop_thread lt;
  std::promise<std::pair<bool, io::event_loop*>> put_done;
  workers.put(
      "k", shared_of("v"), {},
      [&](store_result<object_info> r) {
        put_done.set_value({r.has_value(), io::event_loop::current()});
      },
      &lt.loop);
  auto [ok, where] = put_done.get_future().get();
  EXPECT_TRUE(ok);
  EXPECT_EQ(where, &lt.loop);

  std::promise<std::string> got;
  workers.get_range(
      "k", 0, 0,
      [&](store_result<range_read> r) {
        got.set_value(r ? std::string(reinterpret_cast<const char*>(r->bytes.data()), r->bytes.size())
                        : "error");
      },
      &lt.loop);
  EXPECT_EQ(got.get_future().get(), "v");
}

TEST(object_store_workers, completion_without_a_loop_runs_on_a_worker) {
  mem_object_store fake;
  object_store_workers workers(fake, 1);
  std::promise<std::thread::id> where;
  workers.head("missing", [&](store_result<object_info> r) {
    EXPECT_EQ(r.err().kind, store_errc::not_found);
    where.set_value(std::this_thread::get_id());
  });
  EXPECT_NE(where.get_future().get(), std::this_thread::get_id());
}

TEST(object_store_workers, every_operation) {
  mem_object_store fake;
  object_store_workers workers(fake, 2);
  std::promise<void> p1;
  workers.put("a/1", shared_of("x"), {}, [&](store_result<object_info> r) {
    EXPECT_TRUE(r);
    p1.set_value();
  });
  p1.get_future().get();
  std::promise<std::size_t> listed;
  workers.list("a/", "", 10,
               [&](store_result<list_page> r) { listed.set_value(r ? r->objects.size() : 99); });
  EXPECT_EQ(listed.get_future().get(), 1u);
  std::promise<bool> removed;
  workers.remove("a/1", [&](store_result<store_done> r) { removed.set_value(r.has_value()); });
  EXPECT_TRUE(removed.get_future().get());
  EXPECT_FALSE(fake.contents("a/1"));
}

TEST(object_store_workers, a_stalled_call_holds_one_worker_only) {
  mem_object_store fake;
  object_store_workers workers(fake, 2);
  loop_thread lt;
  fake.inject({store_op::put, fault_kind::stall});
  std::promise<bool> stalled_done;
  workers.put(
      "slow", shared_of("v"), {}, [&](store_result<object_info> r) { stalled_done.set_value(r.has_value()); },
      &lt.loop);
  fake.wait_for_stalled(1);

  // The other worker serves calls, and the loop runs its tasks, while the first call hangs.
  std::promise<bool> other;
  workers.head(
      "slow", [&](store_result<object_info> r) { other.set_value(r.has_value()); }, &lt.loop);
  EXPECT_FALSE(other.get_future().get());  // not there yet: the stalled PUT has not applied
  std::promise<void> loop_alive;
  lt.loop.post([&] { loop_alive.set_value(); });
  loop_alive.get_future().get();

  fake.release_stalls();
  EXPECT_TRUE(stalled_done.get_future().get());
}

TEST(object_store_workers, queued_calls_wait_for_a_free_worker) {
  mem_object_store fake;
  fake.inject({store_op::get, fault_kind::stall});
  std::promise<void> first;
  {
    object_store_workers workers(fake, 1);
    workers.get_range("k", 0, 0, [&](store_result<range_read>) { first.set_value(); });
    fake.wait_for_stalled(1);
    workers.head("k", [](store_result<object_info>) {});
    workers.head("k", [](store_result<object_info>) {});
    EXPECT_EQ(workers.queued(), 2u);
    fake.release_stalls();
    first.get_future().get();
  }  // destruction joins the worker; calls still queued then are dropped without completion
}

}  // namespace
}  // namespace weir::tier

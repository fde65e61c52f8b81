#include "cli/sync_connection.h"

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>

namespace weir::cli {

sync_connection::sync_connection(client::endpoint server)
    : loop_(0), conn_(std::make_unique<client::http_connection>(loop_, std::move(server))) {
  conn_->set_keep_headers(true);
  thread_ = std::thread([this] { loop_.run(); });
}

sync_connection::~sync_connection() {
  loop_.post([this] { conn_->close(); });
  loop_.stop();
  thread_.join();
}

client::http_response sync_connection::run(
    std::function<void(std::function<void(client::http_response)> done)> fn) {
  std::promise<client::http_response> promise;
  auto future = promise.get_future();
  // `done` may be called at most once per exchange: the first outcome (response, error, timeout) wins.
  auto fired = std::make_shared<bool>(false);
  loop_.post([&promise, fired, fn = std::move(fn)] {
    fn([&promise, fired](client::http_response r) {
      if (*fired) return;
      *fired = true;
      promise.set_value(std::move(r));
    });
  });
  return future.get();
}

client::http_response sync_connection::request(const std::string& head, std::string_view body,
                                               unsigned timeout_ms) {
  return run([&, this](std::function<void(client::http_response)> done) {
    const auto timer = loop_.add_timer(std::chrono::milliseconds(timeout_ms), [this] {
      conn_->expire_if_older(INT64_MAX);  // fails the exchange with "timeout" (its callback reports it)
    });
    conn_->request(head, body, true, [this, timer, done](client::http_response& r) {
      loop_.cancel_timer(timer);
      done(std::move(r));
    });
  });
}

client::http_response sync_connection::stream(const std::string& head, stream_handlers handlers,
                                              unsigned head_timeout_ms, unsigned idle_timeout_ms) {
  // The timer in force: the head timeout, then the idle watchdog (re-armed while bytes keep coming).
  struct watch {
    io::event_loop::timer_id timer = 0;
    std::uint64_t bytes_seen = 0;
    std::function<void()> tick;
  };
  auto w = std::make_shared<watch>();
  auto result = run([&, this](std::function<void(client::http_response)> done) {
    auto head_seen = std::make_shared<client::http_response>();
    auto stop_watch = [this, w] {
      loop_.cancel_timer(w->timer);
      w->tick = nullptr;  // breaks the cycle tick -> w -> tick
    };
    // Re-arms the watchdog from the bytes read so far; it fires `tick` after idle_timeout_ms.
    auto arm_idle = [this, w, idle_timeout_ms] {
      w->bytes_seen = conn_->bytes_read();
      w->timer = loop_.add_timer(std::chrono::milliseconds(idle_timeout_ms), [w] {
        // A copy: the tick may end the exchange, whose clean-up drops w->tick.
        if (auto tick = w->tick) tick();
      });
    };
    w->tick = [this, w, arm_idle] {
      if (conn_->bytes_read() == w->bytes_seen) {
        conn_->expire_if_older(INT64_MAX);  // fails the exchange with "timeout"
        return;
      }
      arm_idle();
    };
    w->timer = loop_.add_timer(std::chrono::milliseconds(head_timeout_ms),
                               [this] { conn_->expire_if_older(INT64_MAX); });
    client::http_connection::stream_handlers h;
    h.on_head = [this, w, done, head_seen, stop_watch, arm_idle, &handlers](const client::http_response& r) {
      loop_.cancel_timer(w->timer);
      arm_idle();
      *head_seen = r;
      if (!handlers.on_head(r)) {
        stop_watch();
        conn_->close();  // drops the exchange without its on_end
        done(*head_seen);
      }
    };
    h.on_data = [this, done, head_seen, stop_watch, &handlers](std::string_view data) {
      if (!handlers.on_data(data)) {
        stop_watch();
        conn_->close();
        done(*head_seen);
      }
    };
    h.on_end = [done, stop_watch](client::http_response& r) {
      stop_watch();
      done(std::move(r));
    };
    conn_->stream(head, std::move(h));
  });
  return result;
}

}  // namespace weir::cli

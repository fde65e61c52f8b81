// Reading is bounded per loop turn (server_options::read_bytes_per_turn, docs/http-engine.md): under many
// large bodies at once, no turn of the loop reads more than the budget plus one read, every connection
// is served in the end, and every body arrives whole.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http_test_support.h"
#include "io/fake_transport.h"

namespace weir::http {
namespace {

using testing::client;
using testing::response;
using testing::running_server;

// Bytes read per loop turn, over every connection of the (single) loop.
struct turn_reads {
  std::mutex mu;
  std::map<std::uint64_t, std::size_t> by_turn;
  void add(std::size_t n) {
    std::lock_guard lock(mu);
    by_turn[io::event_loop::current()->turn()] += n;
  }
  std::size_t most() {
    std::lock_guard lock(mu);
    std::size_t m = 0;
    for (const auto& [turn, n] : by_turn) m = std::max(m, n);
    return m;
  }
};

// Plain TCP in reads of at most `piece` bytes (io::chopping_transport), counting what each turn read.
class counting_transport final : public io::transport {
 public:
  counting_transport(int fd, std::size_t piece, std::shared_ptr<turn_reads> reads)
      : inner_(fd, piece, nullptr), reads_(std::move(reads)) {}
  std::ptrdiff_t read(char* buf, std::size_t len) override {
    auto n = inner_.read(buf, len);
    if (n > 0) reads_->add(static_cast<std::size_t>(n));
    return n;
  }
  std::ptrdiff_t write(const char* buf, std::size_t len) override { return inner_.write(buf, len); }
  bool short_read_drains() const override { return false; }
  void shutdown_write() override { inner_.shutdown_write(); }

 private:
  io::chopping_transport inner_;
  std::shared_ptr<turn_reads> reads_;
};

// What a burst of `clients` bodies of 1 MiB each, sent while the loop is held busy, did to the loop.
struct burst_result {
  std::size_t most_read_in_a_turn = 0;
  std::uint64_t reads_deferred = 0;
};

burst_result burst(std::size_t budget, std::size_t piece, int clients) {
  constexpr std::size_t body_bytes = 1 << 20;
  auto reads = std::make_shared<turn_reads>();
  server_options o = testing::test_options();
  o.threads = 1;
  o.read_bytes_per_turn = budget;
  o.make_transport = [reads, piece](int fd) -> std::unique_ptr<io::transport> {
    return std::make_unique<counting_transport>(fd, piece, reads);
  };
  // The handler of /hold keeps the loop busy until released, while the bodies pile up in the sockets.
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  running_server s(o, [&](const request& req, exchange ex) {
    if (req.target() == "/hold") {
      ex.respond(200, {}, "held");
      entered.set_value();
      released.wait();
      return;
    }
    ex.respond(200, {}, std::to_string(req.body.size()) + ":" + std::string(req.body.substr(0, 8)));
  });

  std::vector<std::unique_ptr<client>> cs;
  for (int i = 0; i < clients; ++i) cs.push_back(std::make_unique<client>(s.port()));
  client holder(s.port());
  holder.send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(entered.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
  std::atomic<std::size_t> handed{0};  // bytes the kernel took from the senders (blocking sends)
  std::vector<std::thread> senders;
  for (int i = 0; i < clients; ++i) {
    senders.emplace_back([&, i] {
      std::string body = "client" + std::to_string(i % 10) + "-";
      body.resize(body_bytes, 'b');
      const std::string req =
          "PUT /b HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      for (std::size_t off = 0; off < req.size();) {
        const auto n = ::send(cs[i]->fd(), req.data() + off,
                              std::min<std::size_t>(req.size() - off, 16 << 10), MSG_NOSIGNAL);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
        handed += static_cast<std::size_t>(n);
      }
    });
  }
  // The loop reads nothing while held: wait until the sockets hold far more than a budget and a read
  // (what makes a turn without a bound read more than that: no_budget_reads_what_is_there).
  EXPECT_TRUE(testing::eventually([&] { return handed.load() >= (512u << 10); }));
  release.set_value();
  response r;
  EXPECT_TRUE(holder.read_response(r));
  for (int i = 0; i < clients; ++i) {
    EXPECT_TRUE(cs[i]->read_response(r, false, std::chrono::milliseconds(20'000))) << "client " << i;
    EXPECT_EQ(r.body, std::to_string(body_bytes) + ":client" + std::to_string(i % 10) + "-");
  }
  for (auto& t : senders) t.join();
  return {reads->most(), s.server().stats().reads_deferred};
}

constexpr std::size_t budget = 64 << 10;
constexpr std::size_t piece = 16 << 10;  // the largest single read

TEST(read_budget, many_large_bodies_are_read_a_budget_per_turn_and_all_arrive_whole) {
  burst_result b = burst(budget, piece, 12);
  EXPECT_LE(b.most_read_in_a_turn, budget + piece);
  EXPECT_GT(b.reads_deferred, 0u);
}

TEST(read_budget, no_budget_reads_what_is_there) {
  // The same burst without a bound: a turn reads as much as the sockets hold, which is what the budget
  // prevents (the premise of the test above: the sockets do fill while the loop is held).
  burst_result b = burst(0, piece, 12);
  EXPECT_GT(b.most_read_in_a_turn, budget + piece);
  EXPECT_EQ(b.reads_deferred, 0u);
}

}  // namespace
}  // namespace weir::http

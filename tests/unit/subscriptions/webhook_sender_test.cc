#include "subscriptions/webhook_sender.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <mutex>
#include <string>
#include <thread>

namespace weir::subscriptions {
namespace {

// A one-connection-at-a-time HTTP receiver on 127.0.0.1 that records requests and answers with a canned
// response (or never answers, to exercise timeouts). Bounded: it serves at most `max_requests`.
class loopback_receiver {
 public:
  loopback_receiver(std::string response, int max_requests, bool answer = true,
                    const char* address = "127.0.0.1")
      : response_(std::move(response)), answer_(answer) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    EXPECT_EQ(::inet_pton(AF_INET, address, &a.sin_addr), 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, max_requests] { serve(max_requests); });
  }
  ~loopback_receiver() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/webhook"; }
  std::uint16_t port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void serve(int max_requests) {
    for (int served = 0; served < max_requests && !stop_;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string in;
      char buf[4096];
      // Read the head, then Content-Length bytes of body (bounded by poll timeouts and stop_).
      for (int rounds = 0; rounds < 200 && !stop_; ++rounds) {
        auto head_end = in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          auto cl = in.find("Content-Length: ");
          std::size_t want = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
          if (in.size() >= head_end + 4 + want) break;
        }
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 50) <= 0) continue;
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        requests_.push_back(in);
      }
      ++served;
      if (answer_) {
        std::string out = "HTTP/1.1 " + response_;
        (void)!::write(c, out.data(), out.size());
      } else {
        while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      ::close(c);
    }
  }

  std::string response_;
  bool answer_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

const url_policy dev{true, {}};  // the development exception (allow-loopback-webhooks)

webhook_result send_and_wait(webhook_transport& t, webhook_request req) {
  std::promise<webhook_result> p;
  auto f = p.get_future();
  t.send(std::move(req), [&p](webhook_result r) { p.set_value(std::move(r)); });
  return f.get();
}

TEST(curl_webhook_sender, posts_body_and_headers_and_reads_the_answer) {
  loopback_receiver rx(
      "200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\nConnection: "
      "close\r\n\r\n{\"done\":true}",
      1);
  curl_webhook_sender sender(1);
  webhook_request req;
  req.url = rx.url();
  req.body = R"({"subscription_id":"s"})";
  req.headers = {{"Content-Type", "application/json"}, {"Webhook-Signature", "t=1,kid=ds_x,ed25519=AA"}};
  req.policy = dev;
  auto r = send_and_wait(sender, req);
  EXPECT_EQ(r.http_status, 200) << r.error;
  EXPECT_EQ(r.body, R"({"done":true})");
  auto seen = rx.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].rfind("POST /webhook HTTP/1.1\r\n", 0), 0u) << seen[0];
  EXPECT_NE(seen[0].find("Webhook-Signature: t=1,kid=ds_x,ed25519=AA\r\n"), std::string::npos);
  EXPECT_NE(seen[0].find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_EQ(seen[0].substr(seen[0].size() - req.body.size()), req.body);
}

TEST(curl_webhook_sender, reports_error_statuses) {
  loopback_receiver rx("503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 1);
  curl_webhook_sender sender(1);
  webhook_request req{rx.url(), "{}", {}, 5'000, dev};
  EXPECT_EQ(send_and_wait(sender, req).http_status, 503);
}

TEST(curl_webhook_sender, connection_refused_is_a_transport_error) {
  int port = 0;
  {
    loopback_receiver rx("200 OK\r\n\r\n", 0);  // grab a free port, then release it
    port = std::stoi(rx.url().substr(17, 5));
  }
  curl_webhook_sender sender(1);
  webhook_request req{"http://127.0.0.1:" + std::to_string(port) + "/x", "{}", {}, 2'000, dev};
  auto r = send_and_wait(sender, req);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_FALSE(r.error.empty());
}

TEST(curl_webhook_sender, every_request_has_a_timeout) {
  loopback_receiver rx("", 1, /*answer=*/false);
  curl_webhook_sender sender(1);
  webhook_request req{rx.url(), "{}", {}, 300, dev};
  auto r = send_and_wait(sender, req);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_FALSE(r.error.empty());
}

// PROTOCOL.md 12.8: the connected address is checked too; loopback needs the development exception.
TEST(curl_webhook_sender, refuses_loopback_without_the_exception) {
  loopback_receiver rx("200 OK\r\nContent-Length: 0\r\n\r\n", 1);
  curl_webhook_sender sender(1);
  webhook_request req{rx.url(), "{}", {}, 2'000, url_policy{}};
  auto r = send_and_wait(sender, req);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_NE(r.error.find("loopback"), std::string::npos) << r.error;
  EXPECT_TRUE(rx.requests().empty());
}

// Answers from a table, counting the questions.
class fake_resolver final : public host_resolver {
 public:
  explicit fake_resolver(std::vector<std::vector<std::string>> answers) : answers_(std::move(answers)) {}
  result<std::vector<std::string>> resolve(const std::string& host) override {
    std::lock_guard lock(mu_);
    hosts.push_back(host);
    return answers_.at(std::min(calls++, answers_.size() - 1));
  }
  std::mutex mu_;
  std::size_t calls = 0;
  std::vector<std::string> hosts;

 private:
  std::vector<std::vector<std::string>> answers_;
};

// DNS rebinding (PROTOCOL.md 12.8): the sender resolves once, checks, and curl connects to exactly the
// checked address. The receiver listens on 127.0.0.2 only and the name is "localhost", which the system
// resolves to 127.0.0.1 / ::1: the request arrives only if curl used the checked answer and did not ask
// DNS again. Later answers of the resolver (a metadata address) are never consulted for this request.
TEST(curl_webhook_sender, connects_to_exactly_the_checked_address) {
  loopback_receiver rx("200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 1, true, "127.0.0.2");
  auto resolver = std::make_shared<fake_resolver>(
      std::vector<std::vector<std::string>>{{"127.0.0.2"}, {"169.254.169.254"}});
  curl_webhook_sender sender(1, resolver);
  webhook_request req{"http://localhost:" + std::to_string(rx.port()) + "/webhook", "{}", {}, 5'000, dev};
  auto r = send_and_wait(sender, req);
  EXPECT_EQ(r.http_status, 200) << r.error;
  EXPECT_EQ(r.connected_address, "127.0.0.2");
  EXPECT_EQ(rx.requests().size(), 1u);
  EXPECT_EQ(resolver->calls, 1u);
  EXPECT_EQ(resolver->hosts.at(0), "localhost");
  // The next delivery asks again, gets the metadata address, and never connects.
  auto second = send_and_wait(sender, req);
  EXPECT_EQ(second.http_status, 0);
  EXPECT_NE(second.error.find("169.254.169.254"), std::string::npos) << second.error;
  EXPECT_EQ(second.connected_address, "");
  EXPECT_EQ(rx.requests().size(), 1u);
}

// Without the development exception a name resolving to loopback is refused before any connection.
TEST(curl_webhook_sender, refuses_a_public_name_resolving_to_loopback) {
  loopback_receiver rx("200 OK\r\nContent-Length: 0\r\n\r\n", 1);
  auto resolver = std::make_shared<fake_resolver>(std::vector<std::vector<std::string>>{{"127.0.0.1"}});
  curl_webhook_sender sender(1, resolver);
  webhook_request req{"https://worker.example:" + std::to_string(rx.port()) + "/h", "{}", {}, 2'000, dev};
  auto r = send_and_wait(sender, req);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_NE(r.error.find("loopback"), std::string::npos) << r.error;
  EXPECT_TRUE(rx.requests().empty());
}

TEST(curl_webhook_sender, shutdown_interrupts_a_stalled_request) {
  loopback_receiver rx("", 1, /*answer=*/false);
  curl_webhook_sender sender(1);
  std::promise<webhook_result> p;
  auto f = p.get_future();
  sender.send(webhook_request{rx.url(), "{}", {}, 60'000, dev},
              [&p](webhook_result r) { p.set_value(std::move(r)); });
  for (int i = 0; i < 2'000 && rx.requests().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(rx.requests().size(), 1u);
  sender.shutdown();  // would wait out the 60 s timeout without the progress abort
  auto r = f.get();
  EXPECT_EQ(r.http_status, 0);
  sender.send(webhook_request{rx.url(), "{}", {}, 1'000, dev},
              [](webhook_result) { FAIL() << "sent after shutdown"; });
}

}  // namespace
}  // namespace weir::subscriptions

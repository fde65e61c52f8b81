// s3_object_store against a scripted HTTP server on loopback: what s3rver cannot show. The client sends
// the real payload hash and If-None-Match, reuses its connection, and maps each failure the way the
// retry policy needs: 503 SlowDown, 500, a reset, a body cut short, no answer within the timeout, a
// server that ignores Range. The answers are scripted per request, so each outcome is certain.
#include "tier/s3_object_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "tier/object_store_retry.h"

namespace weir::tier {
namespace {

object_bytes bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return object_bytes(b.begin(), b.end());
}

std::string text_of(const object_bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// What the server does with one request.
struct scripted_answer {
  enum kind_t { respond, reset, cut_body, silent } kind = respond;
  int status = 200;
  std::vector<std::string> headers;
  std::string body;
};

scripted_answer answer(int status, std::string body = {}, std::vector<std::string> headers = {}) {
  return scripted_answer{scripted_answer::respond, status, std::move(headers), std::move(body)};
}

// Accepts connections on 127.0.0.1 and answers each request with the next scripted answer; keeps every
// request's head and body for the test. One thread; stopped and joined by the destructor.
class scripted_server {
 public:
  scripted_server() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~scripted_server() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
    for (int fd : open_) ::close(fd);
  }

  std::uint16_t port() const { return port_; }
  void script(scripted_answer a) {
    std::lock_guard lock(mu_);
    script_.push_back(std::move(a));
  }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int connections() const { return connections_.load(); }

 private:
  void run() {
    std::vector<pollfd> fds;
    std::map<int, std::string> inbuf;
    while (!stop_) {
      fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
      for (int fd : open_) fds.push_back(pollfd{fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          open_.push_back(c);
          ++connections_;
        }
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        int fd = fds[i].fd;
        char buf[65536];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) {
          drop(fd, false);
          continue;
        }
        inbuf[fd].append(buf, static_cast<std::size_t>(n));
        while (auto req = take_request(inbuf[fd])) {
          if (!serve(fd, *req)) {
            inbuf.erase(fd);
            break;
          }
        }
      }
    }
  }

  // A whole request (head and Content-Length body) from the front of `in`, if it has arrived.
  static std::optional<std::string> take_request(std::string& in) {
    std::size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) return std::nullopt;
    std::size_t body = 0;
    std::size_t at = in.find("Content-Length: ");
    if (at != std::string::npos && at < end) body = std::stoul(in.substr(at + 16));
    if (in.size() < end + 4 + body) return std::nullopt;
    std::string req = in.substr(0, end + 4 + body);
    in.erase(0, end + 4 + body);
    return req;
  }

  // False when the connection is gone afterwards.
  bool serve(int fd, const std::string& req) {
    scripted_answer a;
    {
      std::lock_guard lock(mu_);
      requests_.push_back(req);
      if (!script_.empty()) {
        a = std::move(script_.front());
        script_.pop_front();
      } else {
        a = answer(500, "<Error><Code>NoScript</Code></Error>");
      }
    }
    if (a.kind == scripted_answer::reset) {
      drop(fd, true);
      return false;
    }
    if (a.kind == scripted_answer::silent) return true;  // keeps the connection, never answers
    std::string out = "HTTP/1.1 " + std::to_string(a.status) + " X\r\n";
    for (const auto& h : a.headers) out += h + "\r\n";
    out += "Content-Length: " + std::to_string(a.body.size()) + "\r\n\r\n";
    if (req.rfind("HEAD ", 0) != 0)
      out += a.kind == scripted_answer::cut_body ? a.body.substr(0, a.body.size() / 2) : a.body;
    (void)::write(fd, out.data(), out.size());
    if (a.kind == scripted_answer::cut_body) {
      drop(fd, false);
      return false;
    }
    return true;
  }

  void drop(int fd, bool rst) {
    if (rst) {
      linger l{1, 0};  // close with RST: a connection reset by peer
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    ::close(fd);
    open_.erase(std::find(open_.begin(), open_.end(), fd));
  }

  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::vector<int> open_;  // server thread only
  std::mutex mu_;
  std::deque<scripted_answer> script_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

class s3_object_store_test : public ::testing::Test {
 protected:
  s3_object_store make_store(millis timeout = millis{10'000}) {
    s3_settings s;
    s.location = *parse_cold_location("s3://bkt/pre");
    s.endpoint = *parse_s3_endpoint(fmt::format("http://127.0.0.1:{}", server.port()));
    s.credentials = s3_credentials{"AKID", "SECRET", "TOKEN"};
    s3_client_options o;
    o.request_timeout = timeout;
    o.clock = &clock;
    return s3_object_store(std::move(s), o);
  }
  manual_clock clock{1'369'353'600'000};  // 2013-05-24T00:00:00Z
  scripted_server server;
};

TEST_F(s3_object_store_test, put_sends_the_payload_hash_and_signs_it) {
  s3_object_store store = make_store();
  server.script(answer(200, "", {"ETag: \"abc\""}));
  auto r = store.put("k.obj", bytes_of("Welcome to Amazon S3."), put_options{true});
  ASSERT_TRUE(r) << r.err().describe();
  EXPECT_EQ(r->etag, "abc");
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const std::string& req = reqs[0];
  EXPECT_EQ(req.rfind("PUT /bkt/pre/k.obj HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(
      req.find("x-amz-content-sha256: 44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
      std::string::npos);
  EXPECT_NE(req.find("x-amz-date: 20130524T000000Z"), std::string::npos);
  EXPECT_NE(req.find("x-amz-security-token: TOKEN"), std::string::npos);
  EXPECT_NE(req.find("If-None-Match: *"), std::string::npos);
  EXPECT_NE(req.find("SignedHeaders=host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token"),
            std::string::npos);
  EXPECT_EQ(req.find("SECRET"), std::string::npos);
  EXPECT_NE(req.find("\r\n\r\nWelcome to Amazon S3."), std::string::npos);
}

TEST_F(s3_object_store_test, connection_is_reused) {
  s3_object_store store = make_store();
  for (int i = 0; i < 3; ++i) server.script(answer(206, "xy", {"Content-Range: bytes 0-1/9"}));
  for (int i = 0; i < 3; ++i) {
    auto r = store.get_range("k", 0, 2);
    ASSERT_TRUE(r) << r.err().describe();
    EXPECT_EQ(text_of(r->bytes), "xy");
    EXPECT_EQ(r->object_size, 9u);
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_NE(server.requests()[0].find("Range: bytes=0-1"), std::string::npos);
}

TEST_F(s3_object_store_test, errors_are_classified) {
  s3_object_store store = make_store();
  server.script(answer(503, "<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>"));
  server.script(answer(500, "<Error><Code>InternalError</Code></Error>"));
  server.script(answer(404, "<Error><Code>NoSuchKey</Code></Error>"));
  server.script(answer(403, "<Error><Code>SignatureDoesNotMatch</Code></Error>"));
  server.script(answer(412, "<Error><Code>PreconditionFailed</Code></Error>"));
  server.script(answer(409, "<Error><Code>ConditionalRequestConflict</Code></Error>"));
  server.script(answer(416, "<Error><Code>InvalidRange</Code></Error>"));
  server.script(answer(400, "<Error><Code>RequestTimeout</Code></Error>"));
  server.script(answer(400, "not xml"));
  std::vector<std::pair<store_errc, std::string>> want = {
      {store_errc::throttled, "SlowDown"},
      {store_errc::server_error, "InternalError"},
      {store_errc::not_found, "NoSuchKey"},
      {store_errc::auth, "SignatureDoesNotMatch"},
      {store_errc::precondition_failed, "PreconditionFailed"},
      {store_errc::conflict, "ConditionalRequestConflict"},
      {store_errc::bad_range, "InvalidRange"},
      {store_errc::timeout, "RequestTimeout"},
      {store_errc::other, ""}};
  for (const auto& [kind, code] : want) {
    auto r = store.get_range("k", 0, 10);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().kind, kind) << r.err().describe();
    EXPECT_EQ(r.err().code, code);
  }
  EXPECT_EQ(store.metrics().failures.get(), want.size());
}

TEST_F(s3_object_store_test, reset_and_cut_body_are_connection_errors) {
  s3_object_store store = make_store();
  server.script(scripted_answer{scripted_answer::reset});
  auto r1 = store.get_range("k", 0, 10);
  ASSERT_FALSE(r1);
  EXPECT_EQ(r1.err().kind, store_errc::connection);
  server.script(
      scripted_answer{scripted_answer::cut_body, 206, {"Content-Range: bytes 0-9/10"}, "0123456789"});
  auto r2 = store.get_range("k", 0, 10);
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.err().kind, store_errc::connection) << r2.err().describe();
}

TEST_F(s3_object_store_test, no_answer_is_a_timeout) {
  s3_object_store store = make_store(millis{300});
  server.script(scripted_answer{scripted_answer::silent});
  auto r = store.head("k");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().kind, store_errc::timeout) << r.err().describe();
}

TEST_F(s3_object_store_test, retry_policy_rides_out_transient_failures) {
  s3_object_store store = make_store();
  retrying_object_store retrying(store, retry_policy{}, 3, [](millis) {});
  server.script(answer(503, "<Error><Code>SlowDown</Code></Error>"));
  server.script(scripted_answer{scripted_answer::reset});
  server.script(answer(500, "<Error><Code>InternalError</Code></Error>"));
  server.script(answer(200, "", {"ETag: \"e\""}));
  auto r = retrying.put("k", bytes_of("v"));
  ASSERT_TRUE(r) << r.err().describe();
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (const auto& req : reqs)
    EXPECT_NE(req.find("\r\n\r\nv"), std::string::npos);  // the same bytes each time
}

TEST_F(s3_object_store_test, server_that_ignores_range_is_cut_here) {
  s3_object_store store = make_store();
  server.script(answer(200, "0123456789"));
  auto r = store.get_range("k", 3, 4);
  ASSERT_TRUE(r) << r.err().describe();
  EXPECT_EQ(text_of(r->bytes), "3456");
  EXPECT_EQ(r->object_size, 10u);
}

TEST_F(s3_object_store_test, head_and_list_and_delete) {
  s3_object_store store = make_store();
  server.script(answer(200, "", {"ETag: \"t\""}));
  server.script(answer(200,
                       "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>a+b/c="
                       "</NextContinuationToken><Contents><Key>pre/e1/x</Key><Size>4</Size></Contents>"
                       "</ListBucketResult>"));
  server.script(answer(200,
                       "<ListBucketResult><Contents><Key>elsewhere/x</Key><Size>4</Size></Contents>"
                       "</ListBucketResult>"));
  server.script(answer(204));
  // HEAD: the size comes from Content-Length (the scripted server sends 0 for HEAD's empty body).
  auto h = store.head("k");
  ASSERT_TRUE(h) << h.err().describe();
  EXPECT_EQ(h->etag, "t");
  auto page = store.list("e1/", "tok+/=", 5);
  ASSERT_TRUE(page) << page.err().describe();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "e1/x");  // the location's prefix removed
  EXPECT_EQ(page->next_token, "a+b/c=");
  auto outside = store.list("e1/", "", 5);
  ASSERT_FALSE(outside);  // a key outside the prefix is refused, not passed on
  ASSERT_TRUE(store.remove("k"));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].rfind("HEAD /bkt/pre/k ", 0), 0u);
  EXPECT_EQ(
      reqs[1].rfind("GET /bkt?continuation-token=tok%2B%2F%3D&list-type=2&max-keys=5&prefix=pre%2Fe1%2F ", 0),
      0u)
      << reqs[1];
  EXPECT_EQ(reqs[3].rfind("DELETE /bkt/pre/k ", 0), 0u);
}

TEST_F(s3_object_store_test, refuses_oversized_puts_without_sending) {
  s3_object_store store = make_store();
  object_bytes big(object_store::max_object_bytes + 1);
  EXPECT_EQ(store.put("k", big).err().kind, store_errc::invalid);
  EXPECT_TRUE(server.requests().empty());
}

TEST(classify_s3_answer, throttling_codes) {
  EXPECT_EQ(classify_s3_answer(503, ""), store_errc::throttled);
  EXPECT_EQ(classify_s3_answer(429, ""), store_errc::throttled);
  EXPECT_EQ(classify_s3_answer(400, "SlowDown"), store_errc::throttled);
  EXPECT_EQ(classify_s3_answer(502, ""), store_errc::server_error);
  EXPECT_EQ(classify_s3_answer(401, ""), store_errc::auth);
  EXPECT_EQ(classify_s3_answer(405, ""), store_errc::other);
}

}  // namespace
}  // namespace weir::tier

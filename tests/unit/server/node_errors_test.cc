// Wrong answers and unhelpful errors found by hand, checked through a whole node on loopback: every
// status, the headers that belong to it, and bodies that say how to fix the request without showing the
// server's internals.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>

#include "storage/mem_env.h"
#include "unit/server/durable_node_fixture.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::path_on;
using test_support::reply;

const std::map<std::string, std::string> text = {{"Content-Type", "text/plain"}};
const std::map<std::string, std::string> json = {{"Content-Type", "application/json"}};

// `request` sent as it is (the test client always sends its own Host), answered until EOF.
std::string raw_exchange(std::uint16_t port, const std::string& request) {
  int fd = test_support::connect_loopback(port, 10);
  EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::string with_host(const std::string& method, const std::string& path, const std::string& host) {
  return method + " " + path + " HTTP/1.1\r\nHost: " + host +
         "\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

class node_errors_test : public test_support::durable_node_fixture {
 protected:
  void SetUp() override {
    durable_node_fixture::SetUp();
    env_ = &mem_;
    ASSERT_TRUE(start().has_value());
  }
  storage::mem_env mem_;
};

TEST_F(node_errors_test, method_not_allowed_says_which_methods_are) {
  reply r = http(port_, "PATCH", path_on(0, "s"));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET, HEAD, POST, PUT, DELETE, OPTIONS");
}

TEST_F(node_errors_test, json_messages_are_returned_as_sent) {
  std::string p = path_on(1, "j");
  ASSERT_EQ(http(port_, "PUT", p, json).status, 201);
  const std::string big = "123456789012345678901234567890";
  EXPECT_EQ(http(port_, "POST", p, json, "[1e2, -0, " + big + "]").status, 204);
  EXPECT_EQ(http(port_, "POST", p, json, R"({"event": "created", "n": 1.50})").status, 204);
  reply r = http(port_, "GET", p);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "[1e2,-0," + big + R"(,{"event": "created", "n": 1.50}])");
}

TEST_F(node_errors_test, an_empty_stream_seq_after_a_set_one_is_a_regression) {
  std::string p = path_on(0, "seq");
  ASSERT_EQ(http(port_, "PUT", p, text).status, 201);
  EXPECT_EQ(http(port_, "POST", p, {{"Content-Type", "text/plain"}, {"Stream-Seq", "a"}}, "1").status, 204);
  // PROTOCOL.md 5.2: byte-wise "" <= "a", so 409; and nothing is appended.
  reply empty = http(port_, "POST", p, {{"Content-Type", "text/plain"}, {"Stream-Seq", ""}}, "2");
  EXPECT_EQ(empty.status, 409);
  EXPECT_EQ(http(port_, "GET", p).body, "1");
}

TEST_F(node_errors_test, a_malformed_content_type_is_400_not_409) {
  std::string p = path_on(1, "ct");
  ASSERT_EQ(http(port_, "PUT", p, text).status, 201);
  EXPECT_EQ(http(port_, "POST", p, {{"Content-Type", ";;;"}}, "x").status, 400);
  EXPECT_EQ(http(port_, "PUT", path_on(0, "ct2"), {{"Content-Type", ";;;"}}).status, 400);
  EXPECT_EQ(http(port_, "POST", p, {{"Content-Type", "application/json"}}, "1").status, 409);
}

TEST_F(node_errors_test, the_servers_own_paths_are_not_streams) {
  reply put = http(port_, "PUT", "/healthz", text);
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.headers["allow"], "GET, HEAD");
  EXPECT_EQ(http(port_, "GET", "/healthz").status, 200);
  EXPECT_EQ(http(port_, "PUT", "/%68ealthz", text).status, 405);
  EXPECT_EQ(http(port_, "PUT", "/metrics", text).status, 405);
  EXPECT_EQ(http(port_, "POST", "/metrics", text, "x").status, 405);
  EXPECT_EQ(http(port_, "DELETE", "/metrics").status, 405);
  EXPECT_EQ(http(port_, "GET", "/metrics").status, 200);  // setting metrics: on by default
  // PROTOCOL.md 6: the reserved prefix, however it is spelled, never becomes a stream.
  EXPECT_EQ(http(port_, "PUT", "/v1/stream/%5f_ds/x", text).status, 400);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/%5f_ds/x").status, 400);
  EXPECT_EQ(http(port_, "PUT", "/__ds", text).status / 100, 4);
  EXPECT_EQ(http(port_, "PUT", "/%5F%5Fds", text).status, 400);
  EXPECT_EQ(http(port_, "GET", "/__ds").status / 100, 4);
  EXPECT_EQ(http(port_, "PUT", "/healthzz", text).status, 201);
}

TEST_F(node_errors_test, only_a_plain_host_is_copied_into_urls) {
  // Characters that HTTP allows in Host (RFC 3986 reg-name) but that have no place in a Location.
  for (const char* host : {"evil.example%2fx", "a,b", "h:80:81", "x'y"}) {
    std::string r = raw_exchange(port_, with_host("PUT", path_on(0, "h"), host));
    EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 400") << host << "\n" << r;
    EXPECT_EQ(r.find("\r\nLocation:"), std::string::npos) << r;
    r = raw_exchange(port_, with_host("GET", "/v1/stream/__ds/jwks.json", host));
    EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 400") << host << "\n" << r;
  }
  std::string ok = raw_exchange(port_, with_host("PUT", path_on(0, "h"), "[::1]:9"));
  EXPECT_EQ(ok.substr(0, 12), "HTTP/1.1 201") << ok;
  EXPECT_NE(ok.find("Location: http://[::1]:9" + path_on(0, "h") + "\r\n"), std::string::npos) << ok;
}

TEST_F(node_errors_test, a_configured_public_url_is_used_instead_of_host) {
  stop();
  cfg_.public_url = "https://streams.example";
  ASSERT_TRUE(start().has_value());
  std::string r = raw_exchange(port_, with_host("PUT", path_on(1, "pub"), "evil.example"));
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 201") << r;
  EXPECT_NE(r.find("\r\nLocation: https://streams.example" + path_on(1, "pub") + "\r\n"), std::string::npos)
      << r;
  // A public-url that is not scheme://host[:port] stops the start: tests/unit/app/settings_test.cc.
}

TEST_F(node_errors_test, a_bad_offset_names_the_accepted_forms) {
  std::string p = path_on(0, "o");
  ASSERT_EQ(http(port_, "PUT", p, text).status, 201);
  reply r = http(port_, "GET", p + "?offset=yesterday");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("-1"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("now"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("Stream-Next-Offset"), std::string::npos) << r.body;
}

TEST_F(node_errors_test, an_append_with_a_wrong_or_missing_type_names_the_streams_type) {
  std::string p = path_on(1, "t");
  ASSERT_EQ(http(port_, "PUT", p, {{"Content-Type", "text/csv"}}).status, 201);
  reply missing = http(port_, "POST", p, {}, "a,b");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("Content-Type missing"), std::string::npos) << missing.body;
  EXPECT_NE(missing.body.find("text/csv"), std::string::npos) << missing.body;
  reply form = http(port_, "POST", p, {{"Content-Type", "application/x-www-form-urlencoded"}}, "a,b");
  EXPECT_EQ(form.status, 409);
  EXPECT_NE(form.body.find("text/csv"), std::string::npos) << form.body;
  EXPECT_NE(form.body.find("curl"), std::string::npos) << form.body;
  EXPECT_EQ(http(port_, "POST", path_on(0, "nothing"), {}, "x").status, 400);
  EXPECT_EQ(http(port_, "GET", p).body, "");
}

TEST_F(node_errors_test, a_put_on_a_deleted_path_with_live_forks_says_so) {
  std::string src = path_on(0, "src"), fork = path_on(1, "fork");
  ASSERT_EQ(http(port_, "PUT", src, text, "abc").status, 201);
  ASSERT_EQ(http(port_, "PUT", fork, {{"Stream-Forked-From", src}}).status, 201);
  ASSERT_EQ(http(port_, "DELETE", src).status, 204);
  reply again = http(port_, "PUT", src, text);
  EXPECT_EQ(again.status, 409);
  EXPECT_NE(again.body.find("deleted stream"), std::string::npos) << again.body;
  EXPECT_NE(again.body.find("forks"), std::string::npos) << again.body;
}

TEST_F(node_errors_test, storage_failures_show_no_paths_or_system_errors) {
  std::string p = path_on(0, "disk");
  ASSERT_EQ(http(port_, "PUT", p, text, "a").status, 201);
  mem_.set_write_error(true);  // the log write fails with "write <segment path>: EIO"
  reply failed = http(port_, "POST", p, text, "b");
  reply refused = http(port_, "POST", p, text, "c");  // refused while the core rebuilds
  mem_.set_write_error(false);
  for (const reply& r : {failed, refused}) {
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.body, "storage unavailable\n");
    EXPECT_EQ(r.headers.at("retry-after"), "1");
    EXPECT_EQ(r.headers.at("content-type"), "text/plain; charset=utf-8");
  }
}

}  // namespace
}  // namespace weir::server

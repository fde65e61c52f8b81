// h2 over TLS: ALPN offers "h2" ahead of "http/1.1" (RFC 9113 3.2), the session then speaks HTTP/2
// through the TLS transport; with h2 turned off ALPN is HTTP/1.1 only. Certificates are made at test time.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "integration/tls/tls_test_support.h"
#include "io/tls.h"
#include "unit/http/h2_test_client.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::h2_client;
using testing::running_server;
using tls_testing::cert_dir;
using tls_testing::tls_client;

struct h2_tls : ::testing::Test {
  cert_dir certs;
  std::shared_ptr<io::tls_context> tls = std::make_shared<io::tls_context>();
  void SetUp() override {
    certs.leaf("a", 0x2002);
    auto loaded = tls->load(certs.path("a.crt"), certs.path("a.key"));
    ASSERT_TRUE(loaded) << loaded.err().reason;
  }
  server_options options(bool h2 = true) {
    server_options o = testing::test_options();
    o.tls = tls;
    o.h2.enabled = h2;
    return o;
  }
  static void handle(const request& req, exchange ex) {
    if (req.path() == "/tail") {
      static constexpr header sse[] = {{"Content-Type", "text/event-stream"}};
      ex.begin_stream(200, sse);
      ex.write("data: one\n\n");
      ex.flush();
      ex.loop()->add_timer(1ms, [ex]() mutable {
        ex.write("data: two\n\n");
        ex.end();
      });
      return;
    }
    ex.respond(200, {},
               std::string(req.head->method_name) + " " + std::string(req.path()) + " " +
                   std::to_string(req.body.size()));
  }
};

TEST_F(h2_tls, alpn_picks_h2_and_the_session_serves_http2) {
  running_server s(options(), handle);
  tls_client t(s.port(), certs.ca());
  ASSERT_TRUE(t.handshake()) << t.error();
  EXPECT_EQ(t.alpn(), "h2");
  h2_client c(t.fd(), t.ssl());
  auto a = c.request("GET", "/a");
  auto b = c.request("POST", "/b", {}, std::string(200000, 'p'));  // more than one TLS record and window
  auto tail = c.request("GET", "/tail");
  ASSERT_TRUE(
      c.run_until([&] { return c.response(a).closed && c.response(b).closed && c.response(tail).closed; }));
  EXPECT_EQ(c.response(a).body, "GET /a 0");
  EXPECT_EQ(c.response(b).body, "POST /b 200000");
  EXPECT_EQ(c.response(tail).body, "data: one\n\ndata: two\n\n");
  EXPECT_EQ(c.response(tail).error_code, 0u);
  EXPECT_EQ(s.server().stats().h2_connections, 1u);
}

TEST_F(h2_tls, a_client_that_offers_only_http11_gets_http11) {
  running_server s(options(), handle);
  tls_client t(s.port(), certs.ca(), {.alpn = std::string("\x08http/1.1", 9)});
  ASSERT_TRUE(t.handshake()) << t.error();
  EXPECT_EQ(t.alpn(), "http/1.1");
  t.send(testing::get("/x"));
  testing::response r;
  ASSERT_TRUE(t.read_response(r));
  EXPECT_EQ(r.body, "GET /x 0");
  EXPECT_EQ(s.server().stats().h2_connections, 0u);
}

TEST_F(h2_tls, with_h2_off_alpn_offers_only_http11) {
  running_server s(options(false), handle);
  tls_client both(s.port(), certs.ca());
  ASSERT_TRUE(both.handshake()) << both.error();
  EXPECT_EQ(both.alpn(), "http/1.1");
  tls_client h2_only(s.port(), certs.ca(), {.alpn = std::string("\x02h2", 3)});
  EXPECT_FALSE(h2_only.handshake());  // RFC 7301 3.2: no protocol in common
}

}  // namespace
}  // namespace weir::http

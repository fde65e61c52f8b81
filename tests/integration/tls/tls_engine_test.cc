// The HTTP engine over TLS (io::tls_context, io::tls_transport) on loopback, with certificates made at
// test time: handshakes (versions, ALPN, bad inputs, stalls), certificate loading errors, reload for new
// handshakes while old sessions go on, and the engine's paths (pipelining with one write per batch,
// SSE, large bodies both ways, chunked uploads). Also the engine over the chopping fake transport.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "io/fake_transport.h"
#include "io/tls.h"
#include "tls_test_support.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::client;
using testing::get;
using testing::response;
using testing::running_server;
using tls_testing::cert_dir;
using tls_testing::tls_client;

void echo(const request& req, exchange ex) {
  static constexpr header type[] = {{"Content-Type", "text/plain"}};
  std::string out = std::string(req.head->method_name) + " " + std::string(req.target());
  if (!req.body.empty()) out += " body=" + std::string(req.body);
  ex.respond(200, type, out);
}

// A body's length and a position-dependent sum: a lost, repeated or moved byte changes it.
std::string digest(std::string_view body) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < body.size(); ++i) sum = sum * 31 + static_cast<unsigned char>(body[i]) + i;
  return std::to_string(body.size()) + ":" + std::to_string(sum);
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  std::uint32_t x = 12345;
  for (auto& c : s) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

struct tls_fixture : ::testing::Test {
  cert_dir certs;
  std::shared_ptr<io::tls_context> tls = std::make_shared<io::tls_context>();

  void SetUp() override {
    certs.leaf("a", 0x1001);
    auto loaded = tls->load(certs.path("a.crt"), certs.path("a.key"));
    ASSERT_TRUE(loaded) << loaded.err().reason;
  }
  server_options options() {
    server_options o = testing::test_options();
    o.tls = tls;
    o.h2.enabled = false;  // HTTP/1.1 over TLS; ALPN h2 is tests/unit/http/h2_tls_test.cc
    return o;
  }
};

TEST_F(tls_fixture, serves_https_with_tls13_and_alpn_http11) {
  running_server s(options(), echo);
  tls_client c(s.port(), certs.ca());
  ASSERT_TRUE(c.handshake()) << c.error();
  EXPECT_EQ(c.version(), "TLSv1.3");
  EXPECT_EQ(c.alpn(), "http/1.1");  // offered h2 and http/1.1
  EXPECT_EQ(c.peer_serial(), 0x1001);
  c.send(get("/hello"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /hello");
  // Keep-alive: a second request on the same session.
  c.send(get("/again"));
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, "GET /again");
}

TEST_F(tls_fixture, serves_tls12_clients) {
  running_server s(options(), echo);
  tls_client c(s.port(), certs.ca(), {.min_version = TLS1_2_VERSION, .max_version = TLS1_2_VERSION});
  ASSERT_TRUE(c.handshake()) << c.error();
  EXPECT_EQ(c.version(), "TLSv1.2");
  c.send(get("/v12"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, "GET /v12");
}

TEST_F(tls_fixture, refuses_clients_that_offer_only_tls10_or_tls11) {
  running_server s(options(), echo);
  for (int v : {TLS1_VERSION, TLS1_1_VERSION}) {
    tls_client c(s.port(), certs.ca(), {.min_version = TLS1_VERSION, .max_version = v});
    EXPECT_FALSE(c.handshake()) << "version " << v << " was accepted";
  }
  // The server is unharmed.
  tls_client ok(s.port(), certs.ca());
  ASSERT_TRUE(ok.handshake()) << ok.error();
}

TEST_F(tls_fixture, alpn_without_http11_is_refused_and_no_alpn_is_served) {
  running_server s(options(), echo);
  // RFC 7301 3.2: no protocol in common is a fatal no_application_protocol alert.
  tls_client h2_only(s.port(), certs.ca(), {.alpn = std::string("\x02h2", 3)});
  EXPECT_FALSE(h2_only.handshake());
  EXPECT_NE(h2_only.error().find("no application protocol"), std::string::npos) << h2_only.error();
  tls_client no_alpn(s.port(), certs.ca(), {.alpn = ""});
  ASSERT_TRUE(no_alpn.handshake()) << no_alpn.error();
  EXPECT_EQ(no_alpn.alpn(), "");
  no_alpn.send(get("/plain-alpn"));
  response r;
  ASSERT_TRUE(no_alpn.read_response(r));
  EXPECT_EQ(r.body, "GET /plain-alpn");
}

TEST_F(tls_fixture, plaintext_http_on_the_tls_port_is_closed) {
  running_server s(options(), echo);
  client plain(s.port());
  plain.send(get("/plain"));
  EXPECT_TRUE(plain.wait_closed());
  EXPECT_EQ(plain.buffer().find("HTTP/1.1 200"), std::string::npos);
  tls_client ok(s.port(), certs.ca());
  ASSERT_TRUE(ok.handshake()) << ok.error();
  ok.send(get("/after"));
  response r;
  ASSERT_TRUE(ok.read_response(r));
  EXPECT_EQ(r.body, "GET /after");
}

TEST_F(tls_fixture, a_handshake_that_stalls_is_closed_by_the_header_timeout) {
  server_options o = options();
  o.header_timeout = 200ms;  // the idle timeout stays at 60 s: only the header timeout can close these
  running_server s(o, echo);
  client silent(s.port());  // connects, sends nothing
  client half(s.port());    // the start of a ClientHello record, then nothing
  half.send(std::string("\x16\x03\x01\x02\x00\x01", 6));
  EXPECT_TRUE(silent.wait_closed(10s));
  EXPECT_TRUE(half.wait_closed(10s));
  EXPECT_EQ(half.buffer(), "");  // no plaintext 408 into a TLS session
  EXPECT_TRUE(testing::eventually([&] { return s.server().stats().open_connections == 0; }));
}

TEST_F(tls_fixture, reload_serves_the_new_certificate_to_new_sessions_and_keeps_old_ones) {
  running_server s(options(), echo);
  tls_client old_session(s.port(), certs.ca());
  ASSERT_TRUE(old_session.handshake()) << old_session.error();
  EXPECT_EQ(old_session.peer_serial(), 0x1001);
  old_session.send(get("/before"));
  response r;
  ASSERT_TRUE(old_session.read_response(r));

  certs.leaf("b", 0x2002);
  auto loaded = tls->load(certs.path("b.crt"), certs.path("b.key"));
  ASSERT_TRUE(loaded) << loaded.err().reason;
  EXPECT_EQ(loaded->serial, "2002");

  tls_client fresh(s.port(), certs.ca());
  ASSERT_TRUE(fresh.handshake()) << fresh.error();
  EXPECT_EQ(fresh.peer_serial(), 0x2002);
  fresh.send(get("/fresh"));
  ASSERT_TRUE(fresh.read_response(r));
  EXPECT_EQ(r.body, "GET /fresh");

  old_session.send(get("/still"));
  ASSERT_TRUE(old_session.read_response(r));
  EXPECT_EQ(r.body, "GET /still");
}

TEST(tls_context, load_errors_name_the_file_and_keep_the_previous_certificate) {
  cert_dir certs;
  certs.leaf("a", 0x1001);
  certs.leaf("b", 0x2002);
  certs.leaf("expired", 0x3003, -7200, -3600);
  io::tls_context ctx;

  auto mismatch = ctx.load(certs.path("a.crt"), certs.path("b.key"));
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.err().as<io::tls_errc>(), io::tls_errc::mismatch) << mismatch.err().reason;
  EXPECT_NE(mismatch.err().reason.find(certs.path("b.key")), std::string::npos) << mismatch.err().reason;
  EXPECT_FALSE(ctx.loaded());

  auto missing = ctx.load(certs.path("nope.crt"), certs.path("a.key"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.err().as<io::tls_errc>(), io::tls_errc::cert);
  EXPECT_NE(missing.err().reason.find(certs.path("nope.crt")), std::string::npos) << missing.err().reason;
  EXPECT_NE(missing.err().reason.find("No such file"), std::string::npos) << missing.err().reason;

  auto missing_key = ctx.load(certs.path("a.crt"), certs.path("nope.key"));
  ASSERT_FALSE(missing_key);
  EXPECT_NE(missing_key.err().reason.find(certs.path("nope.key")), std::string::npos);

  auto not_pem = ctx.load(certs.path("a.key"), certs.path("a.key"));  // a key where the chain belongs
  ASSERT_FALSE(not_pem);
  EXPECT_EQ(not_pem.err().as<io::tls_errc>(), io::tls_errc::cert) << not_pem.err().reason;

  auto expired = ctx.load(certs.path("expired.crt"), certs.path("expired.key"));
  ASSERT_FALSE(expired);
  EXPECT_EQ(expired.err().as<io::tls_errc>(), io::tls_errc::expired) << expired.err().reason;
  EXPECT_NE(expired.err().reason.find(certs.path("expired.crt")), std::string::npos);

  auto good = ctx.load(certs.path("a.crt"), certs.path("a.key"));
  ASSERT_TRUE(good) << good.err().reason;
  EXPECT_EQ(good->serial, "1001");
  EXPECT_GT(good->seconds_left, 0);
  // A failed reload changes nothing.
  ASSERT_FALSE(ctx.load(certs.path("b.crt"), certs.path("a.key")));
  EXPECT_TRUE(ctx.loaded());
  EXPECT_EQ(ctx.info().serial, "1001");
}

TEST_F(tls_fixture, pipelined_requests_are_answered_in_order_with_one_write) {
  running_server s(options(), echo);
  tls_client c(s.port(), certs.ca());
  ASSERT_TRUE(c.handshake()) << c.error();
  c.send(get("/warm"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  auto before = s.server().stats().sends;
  std::string batch;
  constexpr int n = 32;
  for (int i = 0; i < n; ++i) batch += get("/r" + std::to_string(i));
  c.send(batch);  // one SSL_write: one record, read by one SSL_read
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(c.read_response(r)) << i;
    EXPECT_EQ(r.body, "GET /r" + std::to_string(i));
  }
  EXPECT_EQ(s.server().stats().sends - before, 1u);  // one SSL_write for the 32 responses
}

constexpr header sse_headers[] = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};

TEST_F(tls_fixture, sse_stream_fed_from_a_timer) {
  running_server s(options(), [](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.flush();
    auto count = std::make_shared<int>(0);
    auto tick = std::make_shared<std::function<void()>>();
    *tick = [ex, count, tick]() mutable {
      ex.write("data: tick " + std::to_string(++*count) + "\n\n");
      ex.flush();
      if (*count == 3) {
        ex.end();
        *tick = nullptr;
        return;
      }
      ex.loop()->add_timer(5ms, [tick] { (*tick)(); });
    };
    ex.loop()->add_timer(5ms, [tick] { (*tick)(); });
  });
  tls_client c(s.port(), certs.ca());
  ASSERT_TRUE(c.handshake()) << c.error();
  c.send(get("/events"));
  ASSERT_TRUE(c.wait_for("text/event-stream"));  // the head leaves at once, before any event
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r.body, "data: tick 1\n\ndata: tick 2\n\ndata: tick 3\n\n");
}

void digest_handler(const request& req, exchange ex) {
  static constexpr header type[] = {{"Content-Type", "text/plain"}};
  if (req.path() == "/big") {
    static const std::string big = pattern(3 << 20);
    ex.respond(200, type, big);
    return;
  }
  ex.respond(200, type, digest(req.body));
}

TEST_F(tls_fixture, large_bodies_both_ways) {
  server_options o = options();
  o.limits.max_body_bytes = 16 << 20;
  running_server s(o, digest_handler);
  tls_client c(s.port(), certs.ca());
  ASSERT_TRUE(c.handshake()) << c.error();
  const std::string body = pattern(5 << 20);
  c.send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body);
  response r;
  ASSERT_TRUE(c.read_response(r, false, 30s));
  EXPECT_EQ(r.body, digest(body));
  c.send(get("/big"));
  ASSERT_TRUE(c.read_response(r, false, 30s));
  EXPECT_EQ(r.body.size(), 3u << 20);
  EXPECT_TRUE(r.body == pattern(3 << 20));
}

TEST_F(tls_fixture, chunked_upload_in_separate_records) {
  running_server s(options(), digest_handler);
  tls_client c(s.port(), certs.ca());
  ASSERT_TRUE(c.handshake()) << c.error();
  const std::string part1 = pattern(70'000), part2 = "world";
  c.send("POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
  char size[16];
  std::snprintf(size, sizeof size, "%zx", part1.size());
  c.send(std::string(size) + "\r\n" + part1 + "\r\n");
  c.send("5;ext=1\r\n" + part2 + "\r\n");
  c.send("0\r\n\r\n" + get("/after"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, digest(part1 + part2));
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, digest(""));
}

TEST_F(tls_fixture, kernel_tls_option_still_serves) {
  // With SSL_OP_ENABLE_KTLS OpenSSL uses the kernel's `tls` ULP when it can and user space otherwise;
  // either way the session must work.
  auto ktls = std::make_shared<io::tls_context>(io::tls_options{.ktls = true});
  ASSERT_TRUE(ktls->load(certs.path("a.crt"), certs.path("a.key")));
  server_options o = testing::test_options();
  o.tls = ktls;
  running_server s(o, digest_handler);
  for (int v : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    tls_client c(s.port(), certs.ca(), {.min_version = v, .max_version = v});
    ASSERT_TRUE(c.handshake()) << c.error();
    const std::string body = pattern(200'000);
    c.send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
           body);
    response r;
    ASSERT_TRUE(c.read_response(r));
    EXPECT_EQ(r.body, digest(body));
  }
}

// The chopping fake: every read and write moves at most 7 bytes, so one request takes many reads and
// one batch of responses many writes; the engine must put them together all the same.
TEST(fake_transport, requests_and_bodies_survive_seven_byte_pieces) {
  auto counts = std::make_shared<io::chopping_transport::counters>();
  server_options o = testing::test_options();
  o.make_transport = [counts](int fd) { return std::make_unique<io::chopping_transport>(fd, 7, counts); };
  running_server s(o, echo);
  client c(s.port());
  std::string batch;
  for (int i = 0; i < 8; ++i) batch += get("/p" + std::to_string(i));
  batch += "POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world";
  c.send(batch);
  response r;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(c.read_response(r)) << i;
    EXPECT_EQ(r.body, "GET /p" + std::to_string(i));
  }
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, "POST /b body=hello world");
  EXPECT_GE(counts->reads.load(), batch.size() / 7);
  EXPECT_GE(counts->writes.load(), 9u * 100 / 7);  // each response is over 100 bytes
}

}  // namespace
}  // namespace weir::http

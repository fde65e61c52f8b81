// Records larger than the SSE queue and the read chunk (docs/limits.md): a 16 MiB record reaches an
// SSE reader whole (one data event written over many windows, followed by its control event and by the
// later data), and catch-up and long-poll reads of it follow the read chunk (byte streams: 64 KiB
// pieces; JSON: the record whole, the response being a JSON array of whole messages, written from the
// shared record in windows; docs/limits.md).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/base64.h"
#include "server/node.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::reply;

constexpr std::size_t mib = 1024 * 1024;

struct sse_event {
  std::string type;
  std::string data;  // the data lines joined with '\n' (WHATWG HTML 9.2.6)
};

// Reads an SSE response to its end (the server closes after streamClosed): status, and the events of
// the de-chunked body.
struct sse_reply {
  int status = 0;
  std::string head;
  std::vector<sse_event> events;
};

sse_reply read_sse(std::uint16_t port, const std::string& path) {
  sse_reply out;
  int fd = test_support::connect_loopback(port, 20);
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string raw;
  std::vector<char> buf(1 << 16);
  while (true) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    raw.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return out;
  out.head = raw.substr(0, head_end);
  out.status = std::stoi(raw.substr(9, 3));
  std::string body;  // de-chunked
  std::size_t pos = head_end + 4;
  while (pos < raw.size()) {
    std::size_t le = raw.find("\r\n", pos);
    if (le == std::string::npos) break;
    std::size_t size = std::stoul(raw.substr(pos, le - pos), nullptr, 16);
    if (size == 0) break;
    body.append(raw, le + 2, size);
    pos = le + 2 + size + 2;
  }
  // Events: blocks separated by a blank line; "event:" names it, "data:" lines join with '\n'.
  std::size_t at = 0;
  while (at < body.size()) {
    std::size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    std::string block = body.substr(at, end - at);
    at = end + 2;
    sse_event ev;
    bool first_data = true;
    std::size_t line_at = 0;
    while (line_at <= block.size()) {
      std::size_t le = block.find('\n', line_at);
      if (le == std::string::npos) le = block.size();
      std::string line = block.substr(line_at, le - line_at);
      line_at = le + 1;
      if (line.rfind("event: ", 0) == 0) ev.type = line.substr(7);
      if (line.rfind("data:", 0) == 0) {
        if (!first_data) ev.data += '\n';
        // An SSE reader strips one space after the colon (WHATWG HTML, "Interpreting an event stream").
        ev.data += line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
        first_data = false;
      }
    }
    if (!ev.type.empty()) out.events.push_back(std::move(ev));
  }
  return out;
}

// A read's body with the chunked transfer coding removed (large reads are written in windows).
std::string body_of(const reply& r) {
  auto te = r.headers.find("transfer-encoding");
  if (te == r.headers.end() || te->second != "chunked") return r.body;
  std::string body;
  std::size_t pos = 0;
  while (pos < r.body.size()) {
    std::size_t le = r.body.find("\r\n", pos);
    if (le == std::string::npos) break;
    std::size_t size = std::stoul(r.body.substr(pos, le - pos), nullptr, 16);
    if (size == 0) break;
    body.append(r.body, le + 2, size);
    pos = le + 2 + size + 2;
  }
  return body;
}

class large_record_test : public ::testing::Test {
 protected:
  virtual void configure(serve_config&) {}
  void SetUp() override {
    serve_config cfg;
    cfg.port = 0;
    cfg.threads = 2;
    cfg.durable = false;
    dir_ = ::testing::TempDir() + "weir-large-record-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    cfg.data_dir = dir_;
    configure(cfg);
    n_ = std::make_unique<node>(cfg);
    ASSERT_TRUE(n_->start().has_value());
    port_ = n_->port();
    runner_ = std::thread([this] { n_->run(false); });
  }
  void TearDown() override {
    n_->stop();
    runner_.join();
    n_.reset();
    std::filesystem::remove_all(dir_);  // each test is its own process: a directory per test otherwise
  }

  std::string dir_;
  std::unique_ptr<node> n_;
  std::uint16_t port_ = 0;
  std::thread runner_;
};

// One 16 MiB JSON message with a line break inside (stored byte for byte): over SSE it is one data
// event, and the data appended after it and the stream's closure arrive behind it.
std::string big_json_message() {
  return "{\"big\":\"" + std::string(16 * mib, 'x') + "\",\n\"n\":1}";
}

TEST_F(large_record_test, sse_passes_a_16_mib_json_record_and_what_follows) {
  const std::string p = "/v1/stream/big-json";
  const std::string msg = big_json_message();
  ASSERT_EQ(http(port_, "PUT", p, {{"Content-Type", "application/json"}}).status, 201);
  ASSERT_EQ(http(port_, "POST", p, {{"Content-Type", "application/json"}}, "[" + msg + "]").status, 204);
  ASSERT_EQ(http(port_, "POST", p, {{"Content-Type", "application/json"}, {"Stream-Closed", "true"}},
                 "{\"after\":true}")
                .status,
            204);

  sse_reply r = read_sse(port_, p + "?offset=-1&live=sse");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.events.size(), 4u);
  EXPECT_EQ(r.events[0].type, "data");
  EXPECT_EQ(r.events[0].data.size(), msg.size() + 2);
  EXPECT_TRUE(r.events[0].data == "[" + msg + "]") << "the 16 MiB event arrived changed";
  EXPECT_EQ(r.events[1].type, "control");
  EXPECT_EQ(r.events[1].data.find("streamClosed"), std::string::npos);
  EXPECT_EQ(r.events[2].type, "data");
  EXPECT_EQ(r.events[2].data, "[{\"after\":true}]");
  EXPECT_EQ(r.events[3].type, "control");
  EXPECT_NE(r.events[3].data.find("\"streamClosed\":true"), std::string::npos);

  // Catch-up: the JSON record comes whole (a response is an array of whole messages), then the rest.
  reply c = http(port_, "GET", p + "?offset=-1");
  ASSERT_EQ(c.status, 200);
  EXPECT_TRUE(body_of(c) == "[" + msg + "]");
  EXPECT_EQ(c.headers.count("stream-up-to-date"), 0u);
  reply next = http(port_, "GET", p + "?offset=" + c.headers["stream-next-offset"]);
  EXPECT_EQ(next.body, "[{\"after\":true}]");
  EXPECT_EQ(next.headers["stream-closed"], "true");
}

TEST_F(large_record_test, a_long_poll_gets_a_16_mib_json_record_whole) {
  const std::string p = "/v1/stream/big-json-long-poll";
  const std::string msg = big_json_message();
  ASSERT_EQ(http(port_, "PUT", p, {{"Content-Type", "application/json"}}).status, 201);
  std::string tail = http(port_, "HEAD", p).headers["stream-next-offset"];
  reply polled;
  std::thread poller([&] { polled = http(port_, "GET", p + "?offset=" + tail + "&live=long-poll"); });
  // The append may come before or after the long-poll parks: either way it answers with the record.
  ASSERT_EQ(http(port_, "POST", p, {{"Content-Type", "application/json"}}, msg).status, 204);
  poller.join();
  ASSERT_EQ(polled.status, 200);
  EXPECT_TRUE(body_of(polled) == "[" + msg + "]") << "long-poll body of " << polled.body.size() << " bytes";
  EXPECT_FALSE(polled.headers["stream-cursor"].empty());
}

TEST_F(large_record_test, a_16_mib_byte_record_is_read_in_chunks_over_sse_and_catch_up) {
  const std::string p = "/v1/stream/big-bytes";
  std::string record(16 * mib, '\0');
  for (std::size_t i = 0; i < record.size(); ++i) record[i] = static_cast<char>((i * 7919) >> 3);
  ASSERT_EQ(http(port_, "PUT", p, {{"Content-Type", "application/octet-stream"}}).status, 201);
  ASSERT_EQ(http(port_, "POST", p, {{"Content-Type", "application/octet-stream"}, {"Stream-Closed", "true"}},
                 record)
                .status,
            204);

  sse_reply r = read_sse(port_, p + "?offset=-1&live=sse");
  ASSERT_EQ(r.status, 200);
  std::string got;
  std::size_t data_events = 0;
  for (const sse_event& ev : r.events) {
    if (ev.type != "data") continue;
    ++data_events;
    auto decoded = weir::base64_decode(ev.data);
    ASSERT_TRUE(decoded.has_value()) << decoded.err().reason;
    std::string bytes = *decoded;
    EXPECT_LE(bytes.size(), 64u * 1024) << "an event larger than the read chunk";
    got += bytes;
  }
  EXPECT_EQ(data_events, 16 * mib / (64 * 1024));
  EXPECT_TRUE(got == record) << "SSE delivered " << got.size() << " bytes";
  ASSERT_FALSE(r.events.empty());
  EXPECT_NE(r.events.back().data.find("\"streamClosed\":true"), std::string::npos);

  // Catch-up reads: 64 KiB each (read-chunk-bytes), in order, up to the end.
  std::string read;
  std::string offset = "-1";
  for (int i = 0; i < 1000; ++i) {
    reply c = http(port_, "GET", p + "?offset=" + offset);
    ASSERT_EQ(c.status, 200);
    EXPECT_LE(c.body.size(), 64u * 1024);
    read += c.body;
    offset = c.headers["stream-next-offset"];
    if (c.headers["stream-up-to-date"] == "true") break;
  }
  EXPECT_TRUE(read == record) << "catch-up read " << read.size() << " bytes";
}

// The SSE lifetime (5.8: close roughly every 60 s) may end while a 16 MiB event is being written: the
// event is finished and followed by its control event first, so the reader can reconnect from there.
class short_lived_sse_test : public large_record_test {
 protected:
  void configure(serve_config& cfg) override { cfg.sse_close_after_ms = 1; }
};

TEST_F(short_lived_sse_test, the_lifetime_never_cuts_an_event) {
  const std::string p = "/v1/stream/big-json-short-sse";
  const std::string msg = big_json_message();
  ASSERT_EQ(http(port_, "PUT", p, {{"Content-Type", "application/json"}}).status, 201);
  ASSERT_EQ(http(port_, "POST", p, {{"Content-Type", "application/json"}}, msg).status, 204);
  ASSERT_EQ(http(port_, "POST", p, {{"Content-Type", "application/json"}}, "{\"after\":true}").status, 204);

  sse_reply r = read_sse(port_, p + "?offset=-1&live=sse");
  ASSERT_EQ(r.status, 200);
  ASSERT_GE(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].type, "data");
  EXPECT_TRUE(r.events[0].data == "[" + msg + "]") << "the event was cut at " << r.events[0].data.size();
  EXPECT_EQ(r.events[1].type, "control");
  EXPECT_EQ(r.events.back().type, "control") << "the session ended inside an event";
}

}  // namespace
}  // namespace weir::server

// The known HTTP/2 attacks, each sent for real over a loopback socket with hand-built frames: the
// connection ends with GOAWAY and the right error code (or the stream is refused), the work and memory
// it can cause stay bounded, and another client is served meanwhile.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "http/h2_session.h"
#include "integration/http/http_test_support.h"
#include "unit/http/h2_test_client.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::h2_client;
using testing::h2_frame;
using testing::running_server;

struct frame {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::uint32_t stream = 0;
  std::string payload;
};

std::vector<frame> parse_frames(const std::string& bytes) {
  std::vector<frame> out;
  std::size_t pos = 0;
  while (pos + 9 <= bytes.size()) {
    auto b = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[pos + i]); };
    std::size_t len = (std::size_t{b(0)} << 16) | (std::size_t{b(1)} << 8) | b(2);
    if (pos + 9 + len > bytes.size()) break;
    frame f;
    f.type = b(3);
    f.flags = b(4);
    f.stream = ((std::uint32_t{b(5)} & 0x7f) << 24) | (std::uint32_t{b(6)} << 16) |
               (std::uint32_t{b(7)} << 8) | b(8);
    f.payload = bytes.substr(pos + 9, len);
    out.push_back(std::move(f));
    pos += 9 + len;
  }
  return out;
}

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t{static_cast<std::uint8_t>(s[at])} << 24) |
         (std::uint32_t{static_cast<std::uint8_t>(s[at + 1])} << 16) |
         (std::uint32_t{static_cast<std::uint8_t>(s[at + 2])} << 8) | static_cast<std::uint8_t>(s[at + 3]);
}

std::string u32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// GET / (HPACK, RFC 7541 appendix A: :method GET, :scheme http, :path / from the static table, then
// :authority 127.0.0.1 as a literal without indexing).
const std::string authority = std::string("\x01\x09", 2) + "127.0.0.1";
const std::string get_block = "\x82\x86\x84" + authority;

// The GOAWAY the server sent, if any: its error code.
std::optional<std::uint32_t> goaway_code(const std::string& bytes) {
  for (const auto& f : parse_frames(bytes)) {
    if (f.type == NGHTTP2_GOAWAY && f.payload.size() >= 8) return be32(f.payload, 4);
  }
  return std::nullopt;
}

// The :status of the first response HEADERS the server sent (a fresh HPACK decoder reads it: it is the
// first header block of the connection).
std::string first_status(const std::string& bytes) {
  for (const auto& f : parse_frames(bytes)) {
    if (f.type != NGHTTP2_HEADERS) continue;
    nghttp2_hd_inflater* inf = nullptr;
    nghttp2_hd_inflate_new(&inf);
    std::string status;
    auto* in = reinterpret_cast<const std::uint8_t*>(f.payload.data());
    std::size_t left = f.payload.size();
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      auto n = nghttp2_hd_inflate_hd2(inf, &nv, &flags, in, left, 1);
      if (n < 0) break;
      in += n;
      left -= static_cast<std::size_t>(n);
      if (flags & NGHTTP2_HD_INFLATE_EMIT) {
        std::string name(reinterpret_cast<char*>(nv.name), nv.namelen);
        if (name == ":status") status.assign(reinterpret_cast<char*>(nv.value), nv.valuelen);
      }
      if (flags & NGHTTP2_HD_INFLATE_FINAL) break;
      if (n == 0 && left == 0) break;
    }
    nghttp2_hd_inflate_del(inf);
    return status;
  }
  return {};
}

// A raw client: the preface and an empty SETTINGS first.
struct raw_peer : testing::client {
  explicit raw_peer(std::uint16_t port) : client(port) {
    send(std::string(h2_preface) + h2_frame(NGHTTP2_SETTINGS, 0, 0, ""));
  }
};

// Another client is served while (or after) the attack runs.
void expect_others_served(std::uint16_t port) {
  h2_client c(port);
  auto id = c.request("GET", "/fine");
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.response(id).status, 200);
}

handler hang_or_answer(std::atomic<int>& started) {
  return [&started](const request& req, exchange ex) {
    ++started;
    if (req.path() == "/fine") ex.respond(200, {}, "fine");
    // Anything else is never answered: each stream holds an exchange until reset.
  };
}

TEST(h2_attacks, rapid_reset_is_stopped_with_enhance_your_calm) {
  // CVE-2023-44487: open a stream and reset it at once, thousands of times; each reset frees the stream
  // slot, so the concurrency limit never bites. nghttp2's reset rate limit (1000 burst, 33/s) does.
  std::atomic<int> started{0};
  running_server s(testing::test_options(), hang_or_answer(started));
  raw_peer p(s.port());
  std::string burst;
  for (std::uint32_t i = 0; i < 3000; ++i) {
    std::uint32_t id = 2 * i + 1;
    burst += h2_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id, get_block);
    burst += h2_frame(NGHTTP2_RST_STREAM, 0, id, u32(NGHTTP2_CANCEL));
  }
  p.send(burst);
  ASSERT_TRUE(p.wait_closed());
  EXPECT_EQ(goaway_code(p.buffer()), std::optional<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_LE(s.server().stats().h2_streams, 1100u);  // the burst, not the 3000
  expect_others_served(s.port());
}

TEST(h2_attacks, continuation_flood_is_stopped) {
  // CVE-2024-27316 family: a header block that never ends, in CONTINUATION frames.
  std::atomic<int> started{0};
  running_server s(testing::test_options(), hang_or_answer(started));
  raw_peer p(s.port());
  std::string flood = h2_frame(NGHTTP2_HEADERS, 0, 1, get_block);
  // Literal header field without indexing, new name: "x-a" = 100 bytes of 'a', in each CONTINUATION.
  std::string field = std::string("\x00\x03x-a\x64", 6) + std::string(100, 'a');
  for (int i = 0; i < 1000; ++i) flood += h2_frame(NGHTTP2_CONTINUATION, 0, 1, field);
  p.send(flood);
  ASSERT_TRUE(p.wait_closed());
  EXPECT_TRUE(goaway_code(p.buffer()).has_value());
  EXPECT_EQ(started.load(), 0);
  expect_others_served(s.port());
}

TEST(h2_attacks, an_hpack_bomb_gets_431_without_expanding_in_memory) {
  // One 4000-byte field put into the dynamic table, then referenced by its one-byte index again and
  // again: 16 KiB on the wire would decode to 64 MB. The field list passes max_header_list_bytes after
  // a few references; the request is answered 431 and the connection goes on.
  std::atomic<int> started{0};
  running_server s(testing::test_options(), hang_or_answer(started));
  raw_peer p(s.port());
  // Literal with incremental indexing, new name "x-b" (RFC 7541 6.2.1), value 4000 bytes (7-bit prefix
  // integer: 127 then 4000-127 = 3873 = 0xa1 0x1e).
  std::string block = get_block + std::string("\x40\x03x-b\x7f\xa1\x1e", 8) + std::string(4000, 'b');
  block += std::string(12000, '\xbe');  // index 62: the newest dynamic table entry
  p.send(h2_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                  block.substr(0, 16000)));
  ASSERT_TRUE(testing::eventually([&] {
    p.fill(10ms);
    for (const auto& f : parse_frames(p.buffer())) {
      if (f.type == NGHTTP2_HEADERS && f.stream == 1) return true;
    }
    return false;
  }));
  EXPECT_EQ(started.load(), 0);  // never handed to the handler
  EXPECT_EQ(first_status(p.buffer()), "431");
  // The connection serves on: a normal request on stream 3.
  p.send(h2_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 3,
                  std::string("\x82\x86\x04\x05/fine", 9) + authority));
  ASSERT_TRUE(testing::eventually([&] { return started.load() == 1; }));
}

TEST(h2_attacks, the_oversized_header_list_is_answered_431) {
  auto o = testing::test_options();
  o.h2.max_header_list_bytes = 4096;
  running_server s(o, [](const request&, exchange ex) { ex.respond(200, {}, "ok"); });
  h2_client c(s.port());
  auto big = c.request("GET", "/big", {{"x-big", std::string(8000, 'v')}});
  auto small = c.request("GET", "/small", {{"x-small", std::string(100, 'v')}});
  ASSERT_TRUE(c.run_until([&] { return c.response(big).closed && c.response(small).closed; }));
  EXPECT_EQ(c.response(big).status, 431);
  EXPECT_EQ(c.response(small).status, 200);
}

TEST(h2_attacks, a_ping_flood_from_a_peer_that_does_not_read_is_stopped) {
  // Each PING asks for a PING ACK; a peer that sends them faster than it reads would make us queue
  // them without bound. nghttp2 counts the queued ACKs (at most 1000) and the session ends.
  std::atomic<int> started{0};
  running_server s(testing::test_options(), hang_or_answer(started));
  raw_peer p(s.port());
  std::string flood;
  for (int i = 0; i < 20000; ++i) flood += h2_frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
  p.send(flood);
  ASSERT_TRUE(p.wait_closed());
  expect_others_served(s.port());
}

TEST(h2_attacks, a_settings_flood_is_stopped) {
  std::atomic<int> started{0};
  running_server s(testing::test_options(), hang_or_answer(started));
  raw_peer p(s.port());
  std::string flood;
  for (int i = 0; i < 20000; ++i) flood += h2_frame(NGHTTP2_SETTINGS, 0, 0, "");
  p.send(flood);
  ASSERT_TRUE(p.wait_closed());
  expect_others_served(s.port());
}

TEST(h2_attacks, an_empty_data_flood_is_stopped_with_enhance_your_calm) {
  // CVE-2019-9518: DATA frames with no bytes and no END_STREAM, each a callback and no progress.
  std::atomic<int> started{0};
  running_server s(testing::test_options(), hang_or_answer(started));
  raw_peer p(s.port());
  std::string flood =
      h2_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, "\x83\x86\x84" + authority);  // POST /
  for (int i = 0; i < 5000; ++i) flood += h2_frame(NGHTTP2_DATA, 0, 1, "");
  p.send(flood);
  ASSERT_TRUE(p.wait_closed());
  EXPECT_EQ(goaway_code(p.buffer()), std::optional<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  expect_others_served(s.port());
}

TEST(h2_attacks, streams_beyond_the_concurrency_limit_are_refused) {
  auto o = testing::test_options();
  o.h2.max_concurrent_streams = 10;
  std::atomic<int> started{0};
  running_server s(o, hang_or_answer(started));
  raw_peer p(s.port());
  std::string opens;
  for (std::uint32_t i = 0; i < 11; ++i) {
    opens +=
        h2_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 2 * i + 1, get_block);
  }
  p.send(opens);
  ASSERT_TRUE(testing::eventually([&] {
    p.fill(10ms);
    for (const auto& f : parse_frames(p.buffer())) {
      if (f.type == NGHTTP2_RST_STREAM && f.stream == 21) return true;
    }
    return false;
  }));
  for (const auto& f : parse_frames(p.buffer())) {
    if (f.type == NGHTTP2_RST_STREAM) {
      EXPECT_EQ(be32(f.payload, 0), static_cast<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
    }
  }
  EXPECT_EQ(started.load(), 10);
}

TEST(h2_attacks, a_peer_that_never_opens_its_window_is_closed_by_the_write_timeout) {
  // SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE: a 1 MiB response cannot move. The queued bytes
  // are released when the write timeout closes the connection, as for a peer that does not read.
  auto o = testing::test_options();
  o.write_timeout = 200ms;
  running_server s(o, [](const request&, exchange ex) { ex.respond(200, {}, std::string(1u << 20, 'w')); });
  h2_client c(s.port(), {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  auto id = c.request("GET", "/big");
  ASSERT_TRUE(c.run_until([&] { return c.response(id).status == 200; }));
  EXPECT_TRUE(c.wait_eof());
  EXPECT_TRUE(testing::eventually([&] { return s.server().stats().open_connections == 0; }));
  expect_others_served(s.port());
}

}  // namespace
}  // namespace weir::http

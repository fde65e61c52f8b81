// libFuzzer target: parse_request_head and chunked_decoder on arbitrary bytes, checking invariants:
//   - consumed <= size; complete heads are non-empty and within max_head_bytes; every view lies
//     inside the consumed bytes; errors carry a known status and a reason;
//   - a prefix (in its own exact-size buffer, so over-reads are caught) gives need_more, the same
//     error, or (if complete) the same head;
//   - a complete head followed by more bytes parses the same;
//   - whenever the fast request-line reader accepts a line, the general one accepts it with the same
//     fields (at the input's own line cap and at a small one);
//   - after a chunked head, the body de-chunks the same whole and split at a point chosen from the
//     input, and decoded_bytes() matches what the sink saw.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "http/request_line.h"
#include "http/request_parser.h"

namespace {

using namespace weir::http;

#define FUZZ_CHECK(cond)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "invariant broken: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

bool inside(std::string_view v, std::string_view buf) {
  return v.empty() || (v.data() >= buf.data() && v.data() + v.size() <= buf.data() + buf.size());
}

bool known_status(int s) {
  return s == 400 || s == 413 || s == 414 || s == 417 || s == 431 || s == 501 || s == 505;
}

void check_result(const parse_result& r, const request_head& h, std::string_view in,
                  const parser_limits& lim) {
  FUZZ_CHECK(r.consumed <= in.size());
  if (r.status == parse_status::error) {
    FUZZ_CHECK(known_status(r.error_status));
    FUZZ_CHECK(!r.reason.empty());
    return;
  }
  if (r.status != parse_status::complete) {
    FUZZ_CHECK(r.consumed == 0);
    return;
  }
  FUZZ_CHECK(r.consumed > 0 && r.consumed <= lim.max_head_bytes);
  const std::string_view head = in.substr(0, r.consumed);
  FUZZ_CHECK(head.size() >= 4 && head.substr(head.size() - 4) == "\r\n\r\n");
  FUZZ_CHECK(inside(h.method_name, head) && inside(h.target, head) && inside(h.query, head));
  FUZZ_CHECK(!h.method_name.empty() && !h.target.empty());
  FUZZ_CHECK(h.version_minor <= 1);
  FUZZ_CHECK(h.header_count <= max_headers);
  for (std::size_t i = 0; i < h.header_count; ++i) {
    FUZZ_CHECK(inside(h.headers[i].name, head) && inside(h.headers[i].value, head));
    FUZZ_CHECK(!h.headers[i].name.empty());
    FUZZ_CHECK(h.find(h.headers[i].name) != nullptr);
  }
  if (h.framing == body_framing::content_length) {
    FUZZ_CHECK(h.content_length > 0 && h.content_length <= lim.max_body_bytes);
  }
  if (h.version_minor == 0) FUZZ_CHECK(!h.expect_continue && h.framing != body_framing::chunked);
}

void check_same_head(const request_head& a, const request_head& b) {
  FUZZ_CHECK(a.method == b.method && a.method_name == b.method_name && a.target == b.target);
  FUZZ_CHECK(a.path == b.path && a.query == b.query && a.version_minor == b.version_minor);
  FUZZ_CHECK(a.header_count == b.header_count && a.framing == b.framing);
  FUZZ_CHECK(a.content_length == b.content_length && a.keep_alive == b.keep_alive);
  FUZZ_CHECK(a.expect_continue == b.expect_continue);
  for (std::size_t i = 0; i < a.header_count; ++i) {
    FUZZ_CHECK(a.headers[i].name == b.headers[i].name && a.headers[i].value == b.headers[i].value);
  }
}

struct dechunked {
  chunked_decoder::step step;
  std::string body;
};

// Feeds `body` to a fresh decoder in two pieces cut at `cut`, keeping the unconsumed tail of the
// first piece like a connection does.
dechunked dechunk(std::string_view body, std::size_t cut, std::uint64_t max_body) {
  chunked_decoder dec(max_body);
  dechunked out;
  std::string pending(body.substr(0, cut));
  auto sink = [&](std::string_view d) { out.body.append(d); };
  chunked_decoder::step s = dec.feed(pending, sink);
  FUZZ_CHECK(s.consumed <= pending.size());
  std::size_t used = s.consumed;
  if (s.status == parse_status::need_more) {
    pending.erase(0, s.consumed);
    pending.append(body.substr(cut));
    const chunked_decoder::step t = dec.feed(pending, sink);
    FUZZ_CHECK(t.consumed <= pending.size());
    used += t.consumed;
    s = t;
  }
  s.consumed = used;
  FUZZ_CHECK(dec.decoded_bytes() == out.body.size());
  if (s.status == parse_status::error)
    FUZZ_CHECK(s.error_status == 400 || s.error_status == 413 || s.error_status == 431);
  out.step = s;
  return out;
}

void check_fast_line_agrees(std::string_view in, std::size_t line_cap) {
  detail::request_line fast;
  if (!detail::read_request_line_fast(in.data(), in.size(), line_cap, fast)) return;
  detail::request_line general;
  const detail::request_line_status s = detail::read_request_line(in.data(), in.size(), line_cap, general);
  FUZZ_CHECK(s.status == parse_status::complete);
  FUZZ_CHECK(fast.method == general.method && fast.method_name == general.method_name);
  FUZZ_CHECK(fast.target == general.target && fast.question == general.question);
  FUZZ_CHECK(fast.version_minor == general.version_minor && fast.next == general.next);
}

// request_head is 3 KB; keep the ones we need off the stack and reused.
struct heads {
  request_head whole, prefix, longer;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static heads* hs = new heads;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::uint64_t hash = fnv1a(in);

  parser_limits lim;
  if (size > 0 && (data[0] & 1) != 0) {  // small limits reach 413/414/431 with short inputs
    lim.max_request_line = 48;
    lim.max_head_bytes = 200;
    lim.max_body_bytes = 100;
  }

  if (size > 0) {  // (an empty view's data() may be null; both readers need room > 0 to decide)
    check_fast_line_agrees(in, lim.max_request_line + 2);
    check_fast_line_agrees(in, 1 + hash % 32);
  }

  const parse_result r = parse_request_head(in, hs->whole, lim);
  check_result(r, hs->whole, in, lim);

  // A prefix in its own buffer.
  const std::size_t k = size == 0 ? 0 : static_cast<std::size_t>(hash % (size + 1));
  {
    std::unique_ptr<char[]> copy(new char[k == 0 ? 1 : k]);
    std::copy(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(k), copy.get());
    const std::string_view pre(copy.get(), k);
    const parse_result p = parse_request_head(pre, hs->prefix, lim);
    check_result(p, hs->prefix, pre, lim);
    if (p.status == parse_status::error) {
      FUZZ_CHECK(r.status == parse_status::error && r.error_status == p.error_status);
    } else if (p.status == parse_status::complete) {
      FUZZ_CHECK(r.status == parse_status::complete && r.consumed == p.consumed);
    }
  }

  if (r.status != parse_status::complete) return 0;

  // More bytes after a complete head change nothing.
  {
    std::string longer(in);
    longer += "GET / HTTP/1.1\r\n";
    const parse_result l = parse_request_head(longer, hs->longer, lim);
    FUZZ_CHECK(l.status == parse_status::complete && l.consumed == r.consumed);
    // Compare field by field (views point into different buffers).
    request_head& a = hs->whole;
    request_head& b = hs->longer;
    FUZZ_CHECK(a.header_count == b.header_count && a.framing == b.framing && a.keep_alive == b.keep_alive);
    FUZZ_CHECK(a.target == b.target && a.content_length == b.content_length);
  }
  {
    const parse_result again = parse_request_head(in, hs->prefix, lim);
    FUZZ_CHECK(again.status == r.status && again.consumed == r.consumed);
    check_same_head(hs->whole, hs->prefix);
  }

  if (hs->whole.framing == body_framing::chunked) {
    const std::string_view body = in.substr(r.consumed);
    const std::size_t cut = body.empty() ? 0 : static_cast<std::size_t>((hash >> 32) % (body.size() + 1));
    const dechunked one = dechunk(body, body.size(), lim.max_body_bytes);
    const dechunked two = dechunk(body, cut, lim.max_body_bytes);
    FUZZ_CHECK(one.step.status == two.step.status);
    FUZZ_CHECK(one.step.error_status == two.step.error_status);
    FUZZ_CHECK(one.body == two.body);
    if (one.step.status == parse_status::complete) FUZZ_CHECK(one.step.consumed == two.step.consumed);
    FUZZ_CHECK(one.body.size() <= lim.max_body_bytes);
  }
  return 0;
}

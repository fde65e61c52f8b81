// libFuzzer target: response_parser on arbitrary bytes, as a client reads them. Invariants:
//   - consumed <= the bytes given; body spans lie inside the input; body_bytes() matches the spans;
//   - the outcome (status, error, code, framing, body, bytes consumed) is the same whether the bytes
//     arrive at once or split at a point chosen from the input (each piece in an exact-size buffer);
//   - a complete response with a Content-Length body has exactly that many body bytes.
// The first byte picks the request method (HEAD or GET) and the limits; it is also part of the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/response_parser.h"

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

struct outcome {
  parse_status status = parse_status::need_more;
  int error_status = 0;
  int code = 0;
  response_framing framing = response_framing::none;
  bool keep_alive = false;
  std::uint64_t content_length = 0;
  std::string body;
  std::size_t consumed = 0;
};

// Reads the response from `in` in two pieces cut at `cut`, dropping consumed bytes, then EOF.
outcome run(std::string_view in, std::size_t cut, method m, const parser_limits& lim) {
  static response_parser* p = new response_parser(lim);
  *p = response_parser(lim);
  p->reset(m);
  outcome o;
  std::string pending;
  const std::size_t ends[2] = {cut, in.size()};
  std::size_t from = 0;
  for (std::size_t piece = 0;;) {
    // An exact-size copy so that any read past the given bytes is an ASan error.
    std::unique_ptr<char[]> buf(new char[pending.size() + 1]);
    std::copy(pending.begin(), pending.end(), buf.get());
    const std::string_view view(buf.get(), pending.size());
    response_parser::step s = p->next(view);
    FUZZ_CHECK(s.consumed <= view.size());
    FUZZ_CHECK(s.body.empty() ||
               (s.body.data() >= view.data() && s.body.data() + s.body.size() <= view.data() + view.size()));
    if (s.consumed > 0 && p->head_complete() && o.code == 0) {
      const response_head& h = p->head();
      FUZZ_CHECK(h.status >= 100 && h.status <= 999);
      FUZZ_CHECK(h.header_count <= max_headers);
      o.code = h.status;
      o.framing = h.framing;
      o.keep_alive = h.keep_alive;
      o.content_length = h.content_length;
      if (m == method::head) FUZZ_CHECK(h.framing == response_framing::none);
    }
    o.body.append(s.body);
    o.consumed += s.consumed;
    pending.erase(0, s.consumed);
    o.status = s.status;
    o.error_status = s.error_status;
    if (s.status != parse_status::need_more) break;
    if (s.consumed > 0) continue;
    if (piece == 2) {
      s = p->finish();
      o.status = s.status;
      o.error_status = s.error_status;
      break;
    }
    pending.append(in.substr(from, ends[piece] - from));
    from = ends[piece++];
  }
  FUZZ_CHECK(p->body_bytes() == o.body.size());
  FUZZ_CHECK(o.consumed <= in.size());
  if (o.status == parse_status::error) FUZZ_CHECK(o.error_status >= 400 && o.error_status <= 505);
  if (o.status == parse_status::complete && o.framing == response_framing::content_length) {
    FUZZ_CHECK(o.body.size() == o.content_length);
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::uint64_t hash = fnv1a(in);
  const method m = (size > 0 && (data[0] & 2) != 0) ? method::head : method::get;
  parser_limits lim;
  if (size > 0 && (data[0] & 1) != 0) {
    lim.max_request_line = 48;
    lim.max_head_bytes = 200;
    lim.max_body_bytes = 100;
  }
  const std::size_t cut = static_cast<std::size_t>(hash % (size + 1));
  const outcome whole = run(in, size, m, lim);
  const outcome split = run(in, cut, m, lim);
  FUZZ_CHECK(whole.status == split.status);
  FUZZ_CHECK(whole.error_status == split.error_status);
  FUZZ_CHECK(whole.code == split.code);
  FUZZ_CHECK(whole.framing == split.framing);
  FUZZ_CHECK(whole.keep_alive == split.keep_alive);
  FUZZ_CHECK(whole.body == split.body);
  FUZZ_CHECK(whole.consumed == split.consumed);
  return 0;
}

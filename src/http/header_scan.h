// Internal scanning helpers shared by the request and response parsers: character classes, SSE2
// scans, and the field-line loop (RFC 9112 5). Not part of the http module's API.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "http/request_parser.h"

namespace weir::http::detail {

// A byte-class table: ASCII letters and digits, and the bytes of `extra`.
constexpr std::array<bool, 256> alnum_table_with(std::string_view extra) {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (char c : extra) t[static_cast<unsigned char>(c)] = true;
  return t;
}

// RFC 9110 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" /
// "|" / "~" / DIGIT / ALPHA.
inline constexpr std::array<bool, 256> tchar_table = alnum_table_with("!#$%&'*+-.^_`|~");

inline bool is_tchar(char c) {
  return tchar_table[static_cast<unsigned char>(c)];
}
inline bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

// Equality of a token against a lowercase literal made of letters and '-'. Exact for token input:
// c | 0x20 maps only 'A'/'a' onto 'a' and, among tchars, only '-' onto '-'.
inline bool token_is(std::string_view tok, std::string_view lower_lit) {
  if (tok.size() != lower_lit.size()) return false;
  for (std::size_t i = 0; i < tok.size(); ++i) {
    if ((static_cast<unsigned char>(tok[i]) | 0x20) != static_cast<unsigned char>(lower_lit[i])) return false;
  }
  return true;
}

inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// First byte in [p, end) that a field value cannot hold without a closer look: a control character
// (HTAB and CR included) or DEL. obs-text (0x80-0xFF) passes (RFC 9110 5.5). Returns end if none.
inline const char* scan_field_value(const char* p, const char* end) {
#if defined(__SSE2__)
  // Unsigned x < 0x20 is signed (x ^ 0x80) < (0x20 ^ 0x80).
  const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
  const __m128i low = _mm_set1_epi8(static_cast<char>(0x20 ^ 0x80));
  const __m128i del = _mm_set1_epi8(0x7f);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i bad = _mm_or_si128(_mm_cmplt_epi8(_mm_xor_si128(v, bias), low), _mm_cmpeq_epi8(v, del));
    const int mask = _mm_movemask_epi8(bad);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x20 || c == 0x7f) return p;
  }
  return end;
}

// First byte in [p, end) outside VCHAR (0x21-0x7E): the SP ending a request-target, or an invalid one.
inline const char* scan_vchar(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
  const __m128i lo = _mm_set1_epi8(static_cast<char>(0x21 ^ 0x80));
  const __m128i hi = _mm_set1_epi8(static_cast<char>(0x7e ^ 0x80));
  while (end - p >= 16) {
    const __m128i v = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), bias);
    const __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, lo), _mm_cmpgt_epi8(v, hi));
    const int mask = _mm_movemask_epi8(bad);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x21 || c > 0x7e) return p;
  }
  return end;
}

// scan_vchar that also notes the first '?' before the stop (nullptr if none): the request-target and
// its query split in one pass.
inline const char* scan_target(const char* p, const char* end, const char*& question) {
  question = nullptr;
#if defined(__SSE2__)
  const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
  const __m128i lo = _mm_set1_epi8(static_cast<char>(0x21 ^ 0x80));
  const __m128i hi = _mm_set1_epi8(static_cast<char>(0x7e ^ 0x80));
  const __m128i qmark = _mm_set1_epi8('?');
  while (end - p >= 16) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i v = _mm_xor_si128(raw, bias);
    const auto bad =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_cmplt_epi8(v, lo), _mm_cmpgt_epi8(v, hi))));
    auto q = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(raw, qmark)));
    if (bad != 0) {
      const unsigned stop = static_cast<unsigned>(__builtin_ctz(bad));
      q &= (1u << stop) - 1;
      if (question == nullptr && q != 0) question = p + __builtin_ctz(q);
      return p + stop;
    }
    if (question == nullptr && q != 0) question = p + __builtin_ctz(q);
    p += 16;
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x21 || c > 0x7e) return p;
    if (c == '?' && question == nullptr) question = p;
  }
  return end;
}

// The first byte in [p, end) outside `table`, a byte class that holds every ASCII letter and digit
// and the bytes c1, c2, c3. Those, the common ones, are skipped 16 bytes at a time; any other byte is
// looked up in the table.
inline const char* scan_alnum_class(const char* p, const char* end, const std::array<bool, 256>& table,
                                    char c1, char c2, char c3) {
#if defined(__SSE2__)
  const __m128i fold = _mm_set1_epi8(0x20);
  const __m128i a_minus_1 = _mm_set1_epi8('a' - 1);
  const __m128i z_plus_1 = _mm_set1_epi8('z' + 1);
  const __m128i zero_minus_1 = _mm_set1_epi8('0' - 1);
  const __m128i nine_plus_1 = _mm_set1_epi8('9' + 1);
  const __m128i m1 = _mm_set1_epi8(c1);
  const __m128i m2 = _mm_set1_epi8(c2);
  const __m128i m3 = _mm_set1_epi8(c3);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Only 'A'-'Z' and 'a'-'z' fold into 'a'-'z'; bytes >= 0x80 are negative and match nothing.
    const __m128i lower = _mm_or_si128(v, fold);
    const __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, a_minus_1), _mm_cmplt_epi8(lower, z_plus_1));
    const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, zero_minus_1), _mm_cmplt_epi8(v, nine_plus_1));
    const __m128i extra =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, m1), _mm_cmpeq_epi8(v, m2)), _mm_cmpeq_epi8(v, m3));
    const int mask = ~_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), extra)) & 0xffff;
    if (mask != 0) {
      p += __builtin_ctz(static_cast<unsigned>(mask));
      if (!table[static_cast<unsigned char>(*p)]) return p;
      ++p;  // a rarer member of the class: keep going
      continue;
    }
    p += 16;
  }
#endif
  while (p < end && table[static_cast<unsigned char>(*p)]) ++p;
  return p;
}

// End of a field name starting at p: the first byte in [p, end) that is not a tchar. Names are nearly
// always letters, digits and '-'.
inline const char* scan_token(const char* p, const char* end) {
  return scan_alnum_class(p, end, tchar_table, '-', '_', '.');
}

// Outcome of scanning the field lines of a head.
struct field_scan {
  parse_status status = parse_status::need_more;  // complete: the empty line was read
  const char* end = nullptr;                      // when complete: just past the final CRLF
  int error_status = 0;
  std::string_view reason;
};

// Parses field lines (RFC 9112 5) from p until the empty line, storing them in out[0..count).
// `limit` is where the head may end at the latest (max head bytes), `buf_end` the end of the data:
// running into `limit` before buf_end is 431, running into buf_end is need_more. Rejects obs-fold,
// whitespace before the colon, empty or non-token names, bare CR/LF and control characters in values.
inline field_scan scan_fields(const char* p, const char* limit, const char* buf_end, header* out,
                              std::size_t& count) {
  const auto out_of_data = [&]() -> field_scan {
    if (limit < buf_end) return {parse_status::error, nullptr, 431, "request header fields too large"};
    return {};
  };
  for (;;) {
    if (p >= limit) return out_of_data();
    if (*p == '\r') {
      if (p + 1 >= limit) return out_of_data();
      if (p[1] != '\n') return {parse_status::error, nullptr, 400, "bare CR in header section"};
      return {parse_status::complete, p + 2, 0, {}};
    }
    // RFC 9112 5.2: obs-fold is rejected; 2.2: whitespace before the first field line too.
    if (is_ows(*p)) return {parse_status::error, nullptr, 400, "obsolete line folding"};
    const char* name = p;
    p = scan_token(p, limit);
    if (p >= limit) return out_of_data();
    if (*p != ':') {
      // RFC 9112 5.1: no whitespace between field name and colon.
      if (is_ows(*p)) return {parse_status::error, nullptr, 400, "whitespace before colon"};
      return {parse_status::error, nullptr, 400, "invalid character in header name"};
    }
    if (p == name) return {parse_status::error, nullptr, 400, "empty header name"};
    if (count == max_headers) return {parse_status::error, nullptr, 431, "too many headers"};
    const std::string_view name_view(name, static_cast<std::size_t>(p - name));
    ++p;
    while (p < limit && is_ows(*p)) ++p;
    const char* value = p;
    for (;;) {
      p = scan_field_value(p, limit);
      if (p >= limit) return out_of_data();
      if (*p == '\t') {
        ++p;
        continue;
      }
      if (*p != '\r') return {parse_status::error, nullptr, 400, "invalid character in header value"};
      if (p + 1 >= limit) return out_of_data();
      if (p[1] != '\n') return {parse_status::error, nullptr, 400, "bare CR in header value"};
      break;
    }
    const char* value_end = p;
    while (value_end > value && is_ows(value_end[-1])) --value_end;
    out[count++] = header{name_view, std::string_view(value, static_cast<std::size_t>(value_end - value))};
    p += 2;
  }
}

// Connection options (RFC 9112 9.3, 9.6): a comma list of tokens; only "close" and "keep-alive" matter.
struct connection_options {
  bool close = false;
  bool keep_alive = false;
};
inline void read_connection(std::string_view value, connection_options& opts) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view item = trim_ows(value.substr(0, comma));
    if (token_is(item, "close")) opts.close = true;
    if (token_is(item, "keep-alive")) opts.keep_alive = true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

// Content-Length (RFC 9110 8.6): 1*DIGIT, or a list of identical values. Returns false on bad syntax
// or a list of differing values; sets overflow if the number does not fit in 64 bits.
inline bool read_content_length(std::string_view value, std::uint64_t& out, bool& overflow) {
  bool have = false;
  for (;;) {
    const std::size_t comma = value.find(',');
    const std::string_view item = trim_ows(value.substr(0, comma));
    if (item.empty()) return false;
    std::uint64_t n = 0;
    for (char c : item) {
      if (c < '0' || c > '9') return false;
      const auto d = static_cast<std::uint64_t>(c - '0');
      if (n > (UINT64_MAX - d) / 10) {
        overflow = true;
        n = UINT64_MAX;
      } else {
        n = n * 10 + d;
      }
    }
    if (have && n != out) return false;
    out = n;
    have = true;
    if (comma == std::string_view::npos) return true;
    value.remove_prefix(comma + 1);
  }
}

// Transfer-Encoding (RFC 9112 6.1): 0 when the list is exactly "chunked" (empty list elements ignored,
// RFC 9110 5.6.1), else the status to answer: 501 for a coding we do not implement, 400 for chunked
// applied twice, not last, or a malformed list.
inline int check_transfer_encoding(std::string_view value, bool& seen_chunked) {
  int unknown = 0;
  for (;;) {
    const std::size_t comma = value.find(',');
    const std::string_view item = trim_ows(value.substr(0, comma));
    if (!item.empty()) {
      if (seen_chunked) return 400;  // something after chunked, or chunked twice
      if (token_is(item, "chunked")) {
        seen_chunked = true;
      } else {
        unknown = 501;
      }
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return unknown;
}

}  // namespace weir::http::detail

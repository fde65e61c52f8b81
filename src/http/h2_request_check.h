// h2_request_check: what makes an HTTP/2 request malformed (RFC 9113 8.1.1, 8.2, 8.3), checked field by
// field as HPACK decodes them, then at the end of the header block and of the body. h2_session runs it
// in place of nghttp2's own HTTP messaging checks (nghttp2_option_set_no_http_messaging): the same rules,
// without a second pass over every field (nghttp2 looks each name up again, and calls out to a
// validator per field).
//
// A malformed request is answered with RST_STREAM PROTOCOL_ERROR (RFC 9113 8.1.1) and never reaches a
// handler; that includes any field whose name is not a lowercase token or whose value is not a valid field
// value (as nghttp2 does without an invalid-header callback: nothing is silently dropped).
//
// Plain data (trivially copyable): it lives in the stream it checks. Loop thread, as its stream.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "http/header_scan.h"

namespace weir::http {

namespace detail {
// RFC 9113 8.2.1: a field name is a token without uppercase letters.
constexpr std::array<bool, 256> lower_tchar_table() {
  std::array<bool, 256> t = tchar_table;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = false;
  return t;
}
inline constexpr std::array<bool, 256> lower_tchar = lower_tchar_table();

// A quick pass over a field's bytes, 16 at a time: true if every byte is of a common class (`ok`, a
// function of 16 bytes giving 0xff in each lane that passes). False means "look closer" (a rarer byte
// that the exact check below may still accept), never "malformed". A short field is loaded as two
// overlapping halves, so that no byte outside it is read and every lane holds one of its bytes: most
// request fields are shorter than 16 bytes, where a loop per byte costs most.
#if defined(__SSE2__)
template <class Ok>
inline bool all_common(const char* p, std::size_t n, Ok ok) {
  auto pass = [&](__m128i v) { return _mm_movemask_epi8(ok(v)) == 0xffff; };
  if (n > 16) {
    const char* last = p + n - 16;
    for (; p < last; p += 16)
      if (!pass(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))) return false;
    return pass(_mm_loadu_si128(reinterpret_cast<const __m128i*>(last)));
  }
  if (n >= 8) {
    std::uint64_t a, b;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + n - 8, 8);
    return pass(_mm_set_epi64x(static_cast<long long>(b), static_cast<long long>(a)));
  }
  if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    return pass(
        _mm_set_epi32(static_cast<int>(b), static_cast<int>(a), static_cast<int>(b), static_cast<int>(a)));
  }
  if (n == 0) return true;
  return pass(_mm_setr_epi8(p[0], p[n / 2], p[n - 1], p[0], p[0], p[0], p[0], p[0], p[0], p[0], p[0], p[0],
                            p[0], p[0], p[0], p[0]));
}
// Lanes with a byte in [lo, hi] (ASCII: bytes >= 0x80 are negative and fall outside).
inline __m128i in_range(__m128i v, char lo, char hi) {
  return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(static_cast<char>(lo - 1))),
                       _mm_cmplt_epi8(v, _mm_set1_epi8(static_cast<char>(hi + 1))));
}
inline __m128i lane_is(__m128i v, char c) {
  return _mm_cmpeq_epi8(v, _mm_set1_epi8(c));
}
// Bytes >= 0x80 (obs-text).
inline __m128i high(__m128i v) {
  return _mm_cmplt_epi8(v, _mm_setzero_si128());
}
// The common bytes of names (a-z, 0-9, '-'), of authorities (letters, digits, '.', ':', '-'), of
// methods (A-Z), of paths (VCHAR and obs-text: no control byte, SP or DEL) and of values (the same and SP).
inline bool common_name(std::string_view s) {
  return all_common(s.data(), s.size(), [](__m128i v) {
    return _mm_or_si128(_mm_or_si128(in_range(v, 'a', 'z'), in_range(v, '0', '9')), lane_is(v, '-'));
  });
}
inline bool common_authority(std::string_view s) {
  return all_common(s.data(), s.size(), [](__m128i v) {
    const __m128i letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z');
    const __m128i punct = _mm_or_si128(_mm_or_si128(lane_is(v, '.'), lane_is(v, ':')), lane_is(v, '-'));
    return _mm_or_si128(_mm_or_si128(letter, in_range(v, '0', '9')), punct);
  });
}
inline bool common_method(std::string_view s) {
  return all_common(s.data(), s.size(), [](__m128i v) { return in_range(v, 'A', 'Z'); });
}
inline bool common_path(std::string_view s) {
  return all_common(s.data(), s.size(),
                    [](__m128i v) { return _mm_or_si128(in_range(v, 0x21, 0x7e), high(v)); });
}
inline bool common_value(std::string_view s) {
  return all_common(s.data(), s.size(),
                    [](__m128i v) { return _mm_or_si128(in_range(v, 0x20, 0x7e), high(v)); });
}
#else
inline bool common_name(std::string_view) {
  return false;
}
inline bool common_authority(std::string_view) {
  return false;
}
inline bool common_method(std::string_view) {
  return false;
}
inline bool common_path(std::string_view) {
  return false;
}
inline bool common_value(std::string_view) {
  return false;
}
#endif
}  // namespace detail

class h2_request_check {
 public:
  enum class verdict : std::uint8_t { keep, malformed };
  // The pseudo-header fields a request may carry, in the order h2_session stores them.
  enum pseudo : std::int8_t { none = -1, method = 0, path = 1, authority = 2, scheme = 3 };

  // One field of the request's header block (trailer = false) or of its trailers. `slot` is set to the
  // pseudo-header the field is, or none.
  verdict field(std::string_view name, std::string_view value, bool trailer, pseudo& slot) {
    slot = none;
    if (!name.empty() && name[0] == ':') {
      if (trailer || (seen_ & regular_seen) != 0 || value.empty()) return verdict::malformed;
      return pseudo_field(name, value, slot);
    }
    seen_ |= regular_seen;  // no pseudo-header field may follow
    if (name.empty()) return verdict::malformed;
    if (!detail::common_name(name)) {
      for (char c : name)
        if (!detail::lower_tchar[static_cast<unsigned char>(c)]) return verdict::malformed;
    }
    if (name.size() == 4 && is(name, "host")) {
      if (!authority_chars(value) || (seen_ & host_seen) != 0 || value.empty()) return verdict::malformed;
      seen_ |= host_seen;
      return verdict::keep;
    }
    if (!value_chars(value)) return verdict::malformed;
    switch (name.size()) {
      case 2:  // RFC 9113 8.2.2: TE only as "trailers"
        if (is(name, "te") && !detail::token_is(value, "trailers")) return verdict::malformed;
        break;
      case 7:  // RFC 9113 8.2.2: connection-specific fields
        if (is(name, "upgrade")) return verdict::malformed;
        break;
      case 10:
        if (is(name, "connection") || is(name, "keep-alive")) return verdict::malformed;
        break;
      case 14:
        if (is(name, "content-length")) {
          if (content_length_ >= 0) return verdict::malformed;  // a second one, even if equal
          content_length_ = parse_length(value);
          if (content_length_ < 0) return verdict::malformed;
        }
        break;
      case 16:
        if (is(name, "proxy-connection")) return verdict::malformed;
        break;
      case 17:
        if (is(name, "transfer-encoding")) return verdict::malformed;
        break;
      default:
        break;
    }
    return verdict::keep;
  }

  // The request's header block is complete: the pseudo-header fields it needs (RFC 9113 8.3.1; CONNECT:
  // 8.5). False: malformed.
  bool head_complete() {
    if ((seen_ & meth_connect) != 0) {
      content_length_ = -1;  // a tunnel's bytes are not a body
      return (seen_ & (path_seen | scheme_seen)) == 0 && (seen_ & authority_seen) != 0;
    }
    constexpr std::uint32_t required = method_seen | path_seen | scheme_seen;
    if ((seen_ & required) != required || (seen_ & (authority_seen | host_seen)) == 0) return false;
    // http and https need an absolute path, or "*" for a server-wide OPTIONS.
    return (seen_ & scheme_http) == 0 || (seen_ & path_regular) != 0 ||
           ((seen_ & meth_options) != 0 && (seen_ & path_asterisk) != 0);
  }

  // n bytes of DATA arrived. False: more than the content-length announced (RFC 9113 8.1.1).
  bool data(std::size_t n) {
    received_ += n;
    return content_length_ < 0 || received_ <= static_cast<std::uint64_t>(content_length_);
  }
  // END_STREAM arrived. False: the body is shorter than its content-length.
  bool end_stream() const {
    return content_length_ < 0 || received_ == static_cast<std::uint64_t>(content_length_);
  }

  bool has_content_length() const { return content_length_ >= 0; }
  std::uint64_t content_length() const { return static_cast<std::uint64_t>(content_length_); }

 private:
  enum : std::uint32_t {
    method_seen = 1u << 0,
    path_seen = 1u << 1,
    authority_seen = 1u << 2,
    scheme_seen = 1u << 3,
    host_seen = 1u << 4,
    regular_seen = 1u << 5,
    meth_connect = 1u << 6,
    meth_options = 1u << 7,
    path_regular = 1u << 8,
    path_asterisk = 1u << 9,
    scheme_http = 1u << 10,
  };

  // RFC 3986 3.2: unreserved, sub-delims, ":", "@", "%" of pct-encoded, and "[" "]" of an IP literal.
  static constexpr std::array<bool, 256> authority_table = detail::alnum_table_with("-._~!$&'()*+,;=:@%[]");

  // RFC 9110 5.5 field-value (VCHAR, obs-text, SP and HTAB inside), without leading or trailing
  // whitespace (RFC 9113 8.2.1).
  static bool value_chars(std::string_view v) {
    if (v.empty()) return true;
    if (detail::is_ows(v.front()) || detail::is_ows(v.back())) return false;
    if (detail::common_value(v)) return true;  // HTAB inside is looked at below
    const char* end = v.data() + v.size();
    for (const char* p = v.data();; ++p) {
      p = detail::scan_field_value(p, end);
      if (p == end) return true;
      if (*p != '\t') return false;
    }
  }
  static bool authority_chars(std::string_view v) {
    if (detail::common_authority(v)) return true;
    for (char c : v)
      if (!authority_table[static_cast<unsigned char>(c)]) return false;
    return true;
  }
  // VCHAR and obs-text.
  static bool path_chars(std::string_view v) {
    if (detail::common_path(v)) return true;
    const char* end = v.data() + v.size();
    for (const char* p = v.data();; ++p) {
      p = detail::scan_vchar(p, end);
      if (p == end) return true;
      if (static_cast<unsigned char>(*p) < 0x80) return false;
    }
  }
  // RFC 3986 3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
  static bool scheme_chars(std::string_view v) {
    static constexpr std::array<bool, 256> rest = detail::alnum_table_with("+-.");
    const auto first = static_cast<unsigned char>(v[0]) | 0x20;
    if (first < 'a' || first > 'z') return false;
    for (char c : v)
      if (!rest[static_cast<unsigned char>(c)]) return false;
    return true;
  }
  // A decimal length without sign or whitespace; -1 if it is not one or does not fit in 63 bits.
  static std::int64_t parse_length(std::string_view v) {
    if (v.empty()) return -1;
    std::int64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return -1;
      if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, c - '0', &n)) return -1;
    }
    return n;
  }

  // Equality with a literal, compared at the literal's fixed length (no call to memcmp).
  template <std::size_t n>
  static bool is(std::string_view s, const char (&lit)[n]) {
    return s.size() == n - 1 && std::memcmp(s.data(), lit, n - 1) == 0;
  }

  verdict take(std::uint32_t flag) {
    if ((seen_ & flag) != 0) return verdict::malformed;  // RFC 9113 8.3: each at most once
    seen_ |= flag;
    return verdict::keep;
  }

  verdict pseudo_field(std::string_view name, std::string_view value, pseudo& slot) {
    if (is(name, ":method")) {
      if (!detail::common_method(value)) {
        for (char c : value)
          if (!detail::is_tchar(c)) return verdict::malformed;
      }
      if (is(value, "CONNECT")) seen_ |= meth_connect;
      if (is(value, "OPTIONS")) seen_ |= meth_options;
      slot = method;
      return take(method_seen);
    }
    if (is(name, ":path")) {
      if (!path_chars(value)) return verdict::malformed;
      if (value[0] == '/') seen_ |= path_regular;
      if (is(value, "*")) seen_ |= path_asterisk;
      slot = path;
      return take(path_seen);
    }
    if (is(name, ":authority")) {
      if (!authority_chars(value)) return verdict::malformed;
      slot = authority;
      return take(authority_seen);
    }
    if (is(name, ":scheme")) {
      if (!scheme_chars(value)) return verdict::malformed;
      if (detail::token_is(value, "http") || detail::token_is(value, "https")) seen_ |= scheme_http;
      slot = scheme;
      return take(scheme_seen);
    }
    // :protocol (RFC 8441) is not offered (no SETTINGS_ENABLE_CONNECT_PROTOCOL), :status is a
    // response's, any other is unknown: malformed (RFC 9113 8.3).
    return verdict::malformed;
  }

  std::uint32_t seen_ = 0;
  std::int64_t content_length_ = -1;
  std::uint64_t received_ = 0;
};

}  // namespace weir::http

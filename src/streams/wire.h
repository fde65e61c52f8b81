// wire: the little-endian primitives shared by the command encoding (command_codec.h) and the
// checkpoint blob of a state machine (state_machine::snapshot): u8, LEB128 varints (signed: zigzag),
// strings and byte blobs as varint length + bytes, optionals as a u8 presence flag then the value,
// bools as u8 0/1. Pure functions over bytes; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "streams/types.h"

namespace weir::streams::wire {

// Writes `v` as a LEB128 varint at `p` (at most max_var_bytes); returns the end.
inline constexpr std::size_t max_var_bytes = 10;
inline char* put_var(char* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Appends encoded values to a string.
class writer {
 public:
  writer() = default;
  // Writes into `buf` (cleared; its capacity is kept, so a caller encoding many values reuses it).
  explicit writer(std::string buf) : out_(std::move(buf)) { out_.clear(); }
  void reserve(std::size_t n) { out_.reserve(n); }
  // Bytes written so far: the offset the next value starts at.
  std::size_t size() const { return out_.size(); }

  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  // One append per value, not one push_back per byte: a checkpoint of 760,000 records spent half its
  // time in those.
  void var(std::uint64_t v) {
    char buf[max_var_bytes];
    out_.append(buf, static_cast<std::size_t>(put_var(buf, v) - buf));
  }
  void svar(std::int64_t v) {
    var((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  // Returns the offset of the string's first byte (after its length).
  std::size_t str(std::string_view s) {
    var(s.size());
    std::size_t at = out_.size();
    out_.append(s);
    return at;
  }
  void raw(std::string_view s) { out_.append(s); }
  void boolean(bool b) { u8(b ? 1 : 0); }
  template <class T, class F>
  void opt(const std::optional<T>& o, F&& f) {
    boolean(o.has_value());
    if (o) f(*o);
  }
  // Returns the offset of the payload's bytes (exactly payload.bytes) in the output.
  std::size_t pay(const payload& p) {
    std::size_t at = str(p.bytes ? std::string_view(*p.bytes) : std::string_view());
    var(p.messages);
    u8(static_cast<std::uint8_t>((p.json_invalid ? 1 : 0) | (p.json_empty_array ? 2 : 0)));
    return at;
  }
  void exp(const expiry_config& e) {
    opt(e.ttl_seconds, [&](std::uint64_t v) { var(v); });
    opt(e.expires_at_ms, [&](std::int64_t v) { svar(v); });
    str(e.expires_at_text);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads values back. Never reads past the input: once a read fails (end of input, a varint longer
// than 64 bits, a bool that is not 0/1), ok() stays false and every later read returns a zero value.
class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  std::size_t remaining() const { return in_.size() - pos_; }
  // Marks the input as malformed (a value the caller found out of range).
  void fail() { ok_ = false; }

  std::uint8_t u8() {
    if (!ok_ || pos_ >= in_.size()) {
      ok_ = false;
      return 0;
    }
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::uint64_t var() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64 && ok_; shift += 7) {
      std::uint8_t b = u8();
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return ok_ ? v : 0;
    }
    ok_ = false;
    return 0;
  }
  std::int64_t svar() {
    std::uint64_t z = var();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  std::string str() { return bytes(var()); }
  // The next `n` bytes.
  std::string bytes(std::uint64_t n) {
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // Consumes `expected` if the input continues with exactly those bytes; otherwise fails.
  bool expect(std::string_view expected) {
    if (!ok_ || in_.substr(pos_, expected.size()) != expected) {
      ok_ = false;
      return false;
    }
    pos_ += expected.size();
    return true;
  }
  bool boolean() {
    std::uint8_t b = u8();
    if (b > 1) ok_ = false;
    return b == 1;
  }
  template <class T, class F>
  std::optional<T> opt(F&& f) {
    if (!boolean()) return std::nullopt;
    return f();
  }
  // `at`, when given and the payload has bytes: set to the offset of its first byte in the input.
  payload pay(std::uint32_t* at = nullptr) {
    payload p;
    const std::uint64_t n = var();
    const std::size_t from = pos_;
    std::string bytes = this->bytes(n);
    if (at && ok_ && n > 0) *at = static_cast<std::uint32_t>(from);
    if (!bytes.empty()) p.bytes = make_chunk(std::move(bytes));
    p.messages = static_cast<std::uint32_t>(var());
    std::uint8_t flags = u8();
    if (flags > 3) ok_ = false;
    p.json_invalid = flags & 1;
    p.json_empty_array = flags & 2;
    return p;
  }
  expiry_config exp() {
    expiry_config e;
    e.ttl_seconds = opt<std::uint64_t>([&] { return var(); });
    e.expires_at_ms = opt<std::int64_t>([&] { return svar(); });
    e.expires_at_text = str();
    return e;
  }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace weir::streams::wire

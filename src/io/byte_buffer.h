// byte_buffer: a growable contiguous byte queue (append at the end, consume from the front) for
// connection input and output. Memory is kept between uses (no allocation per request once warm) and
// given back explicitly with release() when a connection goes idle. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "base/assert.h"

namespace weir::io {

class byte_buffer {
 public:
  byte_buffer() = default;
  ~byte_buffer() { std::free(data_); }
  byte_buffer(const byte_buffer&) = delete;
  byte_buffer& operator=(const byte_buffer&) = delete;
  byte_buffer(byte_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        begin_(std::exchange(o.begin_, 0)),
        end_(std::exchange(o.end_, 0)),
        cap_(std::exchange(o.cap_, 0)) {}
  byte_buffer& operator=(byte_buffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      begin_ = std::exchange(o.begin_, 0);
      end_ = std::exchange(o.end_, 0);
      cap_ = std::exchange(o.cap_, 0);
    }
    return *this;
  }

  const char* data() const { return data_ + begin_; }
  char* data() { return data_ + begin_; }
  std::size_t size() const { return end_ - begin_; }
  bool empty() const { return end_ == begin_; }
  std::size_t capacity() const { return cap_; }
  std::string_view view() const { return {data_ + begin_, end_ - begin_}; }

  // Room for at least `n` more bytes at the end; returns where to write them. Moves the live bytes to
  // the front before growing.
  char* prepare(std::size_t n) {
    if (cap_ - end_ < n) make_room(n);
    return data_ + end_;
  }
  std::size_t writable() const { return cap_ - end_; }
  char* write_ptr() { return data_ + end_; }
  void commit(std::size_t n) {
    WEIR_ASSERT(end_ + n <= cap_, "commit {} past capacity {} (end {})", n, cap_, end_);
    end_ += n;
  }
  void append(std::string_view s) {
    if (s.empty()) return;  // memcpy may not be given a null source, even for zero bytes
    std::memcpy(prepare(s.size()), s.data(), s.size());
    end_ += s.size();
  }
  void append(char c) {
    *prepare(1) = c;
    ++end_;
  }
  void consume(std::size_t n) {
    WEIR_ASSERT(n <= size(), "consume {} of {}", n, size());
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Removes `n` bytes starting at `offset` from the front (used to drop decoded chunk framing).
  void erase(std::size_t offset, std::size_t n) {
    WEIR_ASSERT(offset + n <= size(), "erase {}+{} of {}", offset, n, size());
    char* p = data_ + begin_ + offset;
    std::memmove(p, p + n, size() - offset - n);
    end_ -= n;
  }
  void clear() { begin_ = end_ = 0; }
  // Frees the memory when empty (an idle connection keeps no buffer).
  void release() {
    WEIR_ASSERT(empty(), "release of a non-empty buffer ({} bytes)", size());
    std::free(data_);
    data_ = nullptr;
    cap_ = begin_ = end_ = 0;
  }

 private:
  void make_room(std::size_t n) {
    std::size_t live = size();
    if (begin_ > 0) {
      std::memmove(data_, data_ + begin_, live);
      begin_ = 0;
      end_ = live;
      if (cap_ - end_ >= n) return;
    }
    std::size_t want = cap_ == 0 ? 1024 : cap_ * 2;
    while (want - end_ < n) want *= 2;
    auto* p = static_cast<char*>(std::realloc(data_, want));
    WEIR_ASSERT(p != nullptr, "out of memory growing a buffer to {} bytes", want);
    data_ = p;
    cap_ = want;
  }

  char* data_ = nullptr;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::size_t cap_ = 0;
};

}  // namespace weir::io

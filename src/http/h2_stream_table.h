// h2_stream_table: an HTTP/2 session's open streams by stream id, owned. Open addressing with linear
// probing over a power-of-two array, each stream at slot id / 2: a client's stream ids are odd and rise
// (RFC 9113 5.1.1), so the streams open at one time sit in consecutive slots and a lookup is one probe
// in the common case, with no node to allocate per stream (std::unordered_map allocated and freed one
// per request). Ids that a client spaces to collide cost probes bounded by the open streams, which
// SETTINGS_MAX_CONCURRENT_STREAMS bounds.
//
// T has an `id` (std::int32_t). Used from T's session only (loop thread); the table is not changed while
// for_each runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace weir::http {

template <class T>
class h2_stream_table {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T* find(std::int32_t id) const {
    if (size_ == 0) return nullptr;
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(id, mask);
    for (std::size_t n = 0; n <= max_probe_; ++n, i = (i + 1) & mask) {
      T* s = slots_[i].get();
      if (s == nullptr || s->id == id) return s;
    }
    return nullptr;
  }

  // `s->id` is not in the table.
  void insert(std::unique_ptr<T> s) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(std::move(s));
    ++size_;
  }

  // Removes the stream with this id and hands it over (nullptr if there is none).
  std::unique_ptr<T> take(std::int32_t id) {
    if (size_ == 0) return nullptr;
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(id, mask);
    for (std::size_t n = 0;; ++n, i = (i + 1) & mask) {
      if (n > max_probe_ || !slots_[i]) return nullptr;
      if (slots_[i]->id == id) break;
    }
    std::unique_ptr<T> out = std::move(slots_[i]);
    --size_;
    // Backward-shift deletion: a later stream whose home is not in (hole, j] moves into the hole, so
    // that every lookup still finds its stream before an empty slot. Such a stream is at least as far
    // from its home as from the hole, so the scan stops max_probe_ slots past the hole: with streams at
    // their homes, a run of consecutive ids is not walked to its end.
    for (std::size_t j = (i + 1) & mask; slots_[j] && ((j - i) & mask) <= max_probe_; j = (j + 1) & mask) {
      const std::size_t k = home(slots_[j]->id, mask);
      if (((k - i) & mask) > ((j - i) & mask) || k == i) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    return out;
  }

  template <class F>
  void for_each(F&& f) const {
    for (const auto& s : slots_)
      if (s) f(*s);
  }

  // Whether f(stream) holds for any stream; stops at the first.
  template <class F>
  bool any(F&& f) const {
    for (const auto& s : slots_)
      if (s && f(*s)) return true;
    return false;
  }

  // Drops every stream and the array.
  void clear() {
    slots_ = std::vector<std::unique_ptr<T>>();
    size_ = 0;
    max_probe_ = 0;
  }

 private:
  static std::size_t home(std::int32_t id, std::size_t mask) {
    return (static_cast<std::uint32_t>(id) >> 1) & mask;
  }

  void place(std::unique_ptr<T> s) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(s->id, mask), n = 0;
    for (; slots_[i]; i = (i + 1) & mask) ++n;
    slots_[i] = std::move(s);
    if (n > max_probe_) max_probe_ = n;
  }

  void grow() {
    std::vector<std::unique_ptr<T>> old = std::move(slots_);
    slots_ = std::vector<std::unique_ptr<T>>(old.empty() ? 16 : old.size() * 2);
    max_probe_ = 0;
    for (auto& s : old)
      if (s) place(std::move(s));
  }

  std::vector<std::unique_ptr<T>> slots_;  // empty, or a power of two in size, at most half full
  std::size_t size_ = 0;
  std::size_t max_probe_ = 0;  // the farthest any stream was placed from its home since the last grow
};

}  // namespace weir::http

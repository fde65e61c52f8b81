// strong_id<Tag, T>: a number that cannot be mixed up with another kind of number across a module
// boundary (offsets, terms, group ids, core ids).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace weir {

template <class Tag, class T = std::uint64_t>
class strong_id {
 public:
  using value_type = T;
  constexpr strong_id() = default;
  constexpr explicit strong_id(T v) : v_(v) {}
  constexpr T value() const { return v_; }
  constexpr auto operator<=>(const strong_id&) const = default;

 private:
  T v_{};
};

using core_id = strong_id<struct core_id_tag, unsigned>;

}  // namespace weir

template <class Tag, class T>
struct std::hash<weir::strong_id<Tag, T>> {
  std::size_t operator()(const weir::strong_id<Tag, T>& id) const noexcept {
    return std::hash<T>{}(id.value());
  }
};

// result<T>: an expected value or an error (code + short reason). Expected failures are values;
// exceptions are for start-up and config only (STYLE.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "base/assert.h"

namespace weir {

// A module-agnostic error: `code` is a module's own errc cast to int, `reason` a short human text.
struct error {
  int code = 0;
  std::string reason;

  template <class E>
  E as() const {
    return static_cast<E>(code);
  }
};

template <class E>
error make_error(E code, std::string reason = {}) {
  return error{static_cast<int>(code), std::move(reason)};
}

template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  result(error e) : v_(std::in_place_index<1>, std::move(e)) {}      // NOLINT: implicit by design

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    WEIR_ASSERT(has_value(), "result::value() on error: {}", std::get<1>(v_).reason);
    return std::get<0>(v_);
  }
  const T& value() const& {
    WEIR_ASSERT(has_value(), "result::value() on error: {}", std::get<1>(v_).reason);
    return std::get<0>(v_);
  }
  T&& value() && {
    WEIR_ASSERT(has_value(), "result::value() on error: {}", std::get<1>(v_).reason);
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const error& err() const& {
    WEIR_ASSERT(!has_value(), "result::err() on a value");
    return std::get<1>(v_);
  }

 private:
  std::variant<T, error> v_;
};

// result<void>
template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(error e) : e_(std::move(e)), ok_(false) {}  // NOLINT: implicit by design
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const error& err() const {
    WEIR_ASSERT(!ok_, "result<void>::err() on success");
    return e_;
  }

 private:
  error e_;
  bool ok_ = true;
};

using status = result<void>;

}  // namespace weir

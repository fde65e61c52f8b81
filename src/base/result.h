// result<T>: an expected value or an error (code + short reason). Expected failures are values;
// exceptions are for start-up and config only (STYLE.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

#include "base/assert.h"

namespace weir {

// Which module an error code belongs to. Every module's errc has a category (std::error_category:
// its name and a message per code), so an error says whose code it is and a caller that reads it as
// another module's code fails loudly (error::as). A module names its category by declaring, next to
// its enum, `const std::error_category& error_category_of(errc)` (found by ADL); an enum without one
// gets a category of its own made from its type (typed_error_category below), so no two enums share
// a category by accident.
template <class E>
class typed_error_category final : public std::error_category {
 public:
  static const typed_error_category& get() {
    static const typed_error_category c;
    return c;
  }
  const char* name() const noexcept override { return name_.c_str(); }
  std::string message(int code) const override { return name_ + " error " + std::to_string(code); }

 private:
  typed_error_category() : name_(type_name()) {}
  static std::string type_name() {
    // "... [with E = weir::tls_errc]" (GCC) or "... [E = weir::tls_errc]" (clang): the enum's name.
    std::string_view f = __PRETTY_FUNCTION__;
    auto at = f.find("E = ");
    if (at == std::string_view::npos) return "weir";
    f.remove_prefix(at + 4);
    return std::string(f.substr(0, f.find_first_of(";]")));
  }
  std::string name_;
};

template <class E>
const std::error_category& error_category_of(E) {
  return typed_error_category<E>::get();
}

// A module's category: a fixed name, and a message per code from the module's errc_name (found by ADL).
// A module defines it inline beside its enum:
//   inline const std::error_category& error_category_of(errc) {
//     static const named_error_category<errc> c("storage");
//     return c;
//   }
template <class E>
class named_error_category final : public std::error_category {
 public:
  explicit named_error_category(const char* name) : name_(name) {}
  const char* name() const noexcept override { return name_; }
  std::string message(int code) const override { return errc_name(static_cast<E>(code)); }

 private:
  const char* name_;
};

// std::errc (POSIX conditions) keeps the standard's own category.
inline const std::error_category& error_category_of(std::errc) {
  return std::generic_category();
}

// The category of plain `error{code, reason}` values that no module's enum made (a generic failure).
const std::error_category& generic_weir_category();

// An error: `code` is a module's own errc cast to int, `category` says which module's (null: the
// generic category), `reason` a short human text.
struct error {
  int code = 0;
  std::string reason;
  const std::error_category* category = nullptr;

  const std::error_category& cat() const { return category ? *category : generic_weir_category(); }
  std::error_code ec() const { return {code, cat()}; }

  // True when the code is E's (of E's category).
  template <class E>
  bool is() const {
    return &cat() == &error_category_of(E{});
  }
  // The code as E; reading another module's code as E is a bug (fails with both categories named).
  template <class E>
  E as() const {
    WEIR_ASSERT(is<E>(), "error::as: a code of {} read as {} ({})", cat().name(),
                error_category_of(E{}).name(), reason);
    return static_cast<E>(code);
  }
};

template <class E>
error make_error(E code, std::string reason = {}) {
  return error{static_cast<int>(code), std::move(reason), &error_category_of(code)};
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

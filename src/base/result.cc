#include "base/result.h"

namespace weir {

namespace {
class generic_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "weir"; }
  std::string message(int code) const override {
    return code == 0 ? "ok" : "failure " + std::to_string(code);
  }
};
}  // namespace

const std::error_category& generic_weir_category() {
  static const generic_category_impl c;
  return c;
}

}  // namespace weir

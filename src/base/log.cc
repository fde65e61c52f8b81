#include "base/log.h"

namespace weir::log {
void set_level(std::string_view name) {
  spdlog::set_level(spdlog::level::from_str(std::string(name)));
}
}  // namespace weir::log

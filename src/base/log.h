// Logging: spdlog, one process-wide logger. Messages say what happened and with which values.
#pragma once

#include <spdlog/spdlog.h>

namespace weir::log {
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;
// Sets the level from a name ("trace", "debug", "info", "warn", "error", "off").
void set_level(std::string_view name);
}  // namespace weir::log

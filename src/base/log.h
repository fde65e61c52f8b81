// Logging: spdlog, one process-wide logger. Messages say what happened and with which values.
// Two formats: `text` for people (spdlog's default pattern) and `json` for machines, one object a line:
//   {"ts":"2026-12-01T10:00:00.123Z","level":"info","thread":1234,"msg":"..."}
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

namespace weir::log {
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;
// Sets the level from a name ("trace", "debug", "info", "warn", "error", "off").
void set_level(std::string_view name);
// "text" or "json"; false for another name.
bool set_format(std::string_view name);

// The JSON line formatter (exposed for tests).
std::unique_ptr<spdlog::formatter> make_json_formatter();
}  // namespace weir::log

#include "base/log.h"

#include <spdlog/pattern_formatter.h>

#include <chrono>
#include <ctime>

#include "base/json_writer.h"

namespace weir::log {
namespace {

class json_formatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line;
    line.reserve(96 + msg.payload.size());
    line += "{\"ts\":\"";
    using namespace std::chrono;
    auto t = system_clock::to_time_t(msg.time);
    auto ms = duration_cast<milliseconds>(msg.time.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char ts[40];
    std::size_t n = std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    line.append(ts, n);
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03dZ", static_cast<int>(ms));
    line += frac;
    line += "\",\"level\":\"";
    auto level = spdlog::level::to_string_view(msg.level);
    line.append(level.data(), level.size());
    line += "\",\"thread\":";
    line += std::to_string(msg.thread_id);
    line += ",\"msg\":";
    json_writer::append_quoted(line, std::string_view(msg.payload.data(), msg.payload.size()));
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<json_formatter>(); }
};

}  // namespace

void set_level(std::string_view name) {
  spdlog::set_level(spdlog::level::from_str(std::string(name)));
}

bool set_format(std::string_view name) {
  if (name == "text") {
    spdlog::set_formatter(std::make_unique<spdlog::pattern_formatter>());
    return true;
  }
  if (name == "json") {
    spdlog::set_formatter(make_json_formatter());
    return true;
  }
  return false;
}

std::unique_ptr<spdlog::formatter> make_json_formatter() {
  return std::make_unique<json_formatter>();
}

}  // namespace weir::log

#include "base/log.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <string>

namespace weir::log {
namespace {

// Each line of --log-format json is one JSON object that a real parser reads back, with the message
// intact whatever it holds (quotes, backslashes, newlines, control bytes, UTF-8).
TEST(log, json_lines_parse_back_with_the_message_intact) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("json-test", sink);
  logger.set_formatter(make_json_formatter());
  const std::string message = "a \"quoted\" path C:\\x\nnext line\t\x01 caf\xc3\xa9";
  logger.warn("{}", message);
  logger.info("second");

  std::istringstream lines(out.str());
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(line).get(doc), simdjson::SUCCESS) << line;
  std::string_view msg, level, ts;
  ASSERT_EQ(doc["msg"].get(msg), simdjson::SUCCESS);
  ASSERT_EQ(doc["level"].get(level), simdjson::SUCCESS);
  ASSERT_EQ(doc["ts"].get(ts), simdjson::SUCCESS);
  EXPECT_EQ(std::string(msg), message);
  EXPECT_EQ(level, "warning");
  EXPECT_EQ(ts.size(), 24u) << ts;  // 2026-12-01T10:00:00.123Z
  EXPECT_EQ(ts.back(), 'Z');
  std::int64_t thread = 0;
  EXPECT_EQ(doc["thread"].get(thread), simdjson::SUCCESS);

  ASSERT_TRUE(std::getline(lines, line));
  ASSERT_EQ(parser.parse(line).get(doc), simdjson::SUCCESS) << line;
  ASSERT_EQ(doc["msg"].get(msg), simdjson::SUCCESS);
  EXPECT_EQ(msg, "second");
  EXPECT_FALSE(std::getline(lines, line));
}

TEST(log, formats_by_name) {
  EXPECT_TRUE(set_format("json"));
  EXPECT_TRUE(set_format("text"));
  EXPECT_FALSE(set_format("xml"));
}

}  // namespace
}  // namespace weir::log

// access_log: the line formats (text and JSON, with the HTTP version), what they never contain (the query
// string is not even handed over by the engine; a quote or control byte cannot forge a field), and that lines
// reach the file once flushed.
#include "server/access_log.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace weir::server {
namespace {

using namespace std::chrono;

http::exchange_record sample_record() {
  http::exchange_record r;
  r.status = 204;
  r.bytes_out = 321;
  r.total_ns = 1'500'000;  // 1.5 ms
  r.client = 0x7f000001;
  r.method = "POST";
  r.path = "/v1/stream/a";
  return r;
}

const system_clock::time_point at = system_clock::time_point(seconds(1'764'583'200) + milliseconds(7));

TEST(access_log, text_line_has_time_client_request_status_bytes_and_duration) {
  std::string line;
  access_log::format_line(line, sample_record(), at, false);
  EXPECT_EQ(line, "2025-12-01T10:00:00.007Z 127.0.0.1 \"POST /v1/stream/a HTTP/1.1\" 204 321 0.001500\n");
}

TEST(access_log, the_cached_second_follows_the_clock) {
  access_log::second_cache cache;
  std::string lines;
  access_log::format_line(lines, sample_record(), at, false, cache);
  access_log::format_line(lines, sample_record(), at + milliseconds(1'995), false, cache);
  access_log::format_line(lines, sample_record(), at + hours(24), false, cache);
  EXPECT_EQ(lines,
            "2025-12-01T10:00:00.007Z 127.0.0.1 \"POST /v1/stream/a HTTP/1.1\" 204 321 0.001500\n"
            "2025-12-01T10:00:02.002Z 127.0.0.1 \"POST /v1/stream/a HTTP/1.1\" 204 321 0.001500\n"
            "2025-12-02T10:00:00.007Z 127.0.0.1 \"POST /v1/stream/a HTTP/1.1\" 204 321 0.001500\n");
}

TEST(access_log, durations_print_with_six_decimals) {
  http::exchange_record r = sample_record();
  r.total_ns = 12'345'678'901;  // 12.345678901 s: truncated to microseconds
  std::string line;
  access_log::format_line(line, r, at, false);
  EXPECT_NE(line.find(" 12.345678\n"), std::string::npos) << line;
}

TEST(access_log, text_line_cannot_be_forged_by_quotes_or_control_bytes) {
  http::exchange_record r = sample_record();
  r.path = "/a\" 200 0 0\n2025 x";
  std::string line;
  access_log::format_line(line, r, at, false);
  EXPECT_EQ(line,
            "2025-12-01T10:00:00.007Z 127.0.0.1 \"POST /a??200?0?0?2025?x HTTP/1.1\" 204 321 0.001500\n");
}

TEST(access_log, lines_name_the_http_version_that_served_the_exchange) {
  http::exchange_record r = sample_record();
  r.protocol = http::http_protocol::h2;
  std::string line;
  access_log::format_line(line, r, at, false);
  EXPECT_EQ(line, "2025-12-01T10:00:00.007Z 127.0.0.1 \"POST /v1/stream/a HTTP/2\" 204 321 0.001500\n");
  r.protocol = http::http_protocol::http1_0;
  line.clear();
  access_log::format_line(line, r, at, true);
  EXPECT_NE(line.find("\"protocol\":\"HTTP/1.0\""), std::string::npos) << line;
}

TEST(access_log, unknown_parts_are_dashes) {
  http::exchange_record r;  // an error the engine answered before the request line was understood
  r.status = 400;
  std::string line;
  access_log::format_line(line, r, at, false);
  EXPECT_EQ(line, "2025-12-01T10:00:00.007Z - \"- - HTTP/1.1\" 400 0 0.000000\n");
}

TEST(access_log, json_line_parses_back_with_every_field) {
  http::exchange_record r = sample_record();
  r.path = "/v1/stream/\"quoted\"\\";
  std::string line;
  access_log::format_line(line, r, at, true);
  ASSERT_EQ(line.back(), '\n');
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(line).get(doc), simdjson::SUCCESS) << line;
  EXPECT_EQ(std::string_view(doc["ts"]), "2025-12-01T10:00:00.007Z");
  EXPECT_EQ(std::string_view(doc["client"]), "127.0.0.1");
  EXPECT_EQ(std::string_view(doc["method"]), "POST");
  EXPECT_EQ(std::string_view(doc["path"]), "/v1/stream/\"quoted\"\\");
  EXPECT_EQ(std::string_view(doc["protocol"]), "HTTP/1.1");
  EXPECT_EQ(int64_t(doc["status"]), 204);
  EXPECT_EQ(int64_t(doc["bytes"]), 321);
  EXPECT_DOUBLE_EQ(double(doc["duration_s"]), 0.0015);
}

TEST(access_log, lines_reach_the_file_when_flushed_and_at_destruction) {
  const auto path = std::filesystem::temp_directory_path() / ("weir-access-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  auto read = [&] {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  {
    auto log = access_log::open(path.string(), false, 2);
    ASSERT_TRUE(log) << log.err().reason;
    (*log)->write(0, sample_record());
    (*log)->write(1, sample_record());
    EXPECT_EQ(read(), "") << "buffered per core until a flush";
    (*log)->flush(1);
    const std::string one = read();
    EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), 1);
  }
  const std::string all = read();
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 2);
  std::filesystem::remove(path);
}

TEST(access_log, a_path_that_cannot_be_opened_is_an_error_naming_it) {
  auto log = access_log::open("/nonexistent-dir/access.log", false, 1);
  ASSERT_FALSE(log);
  EXPECT_NE(log.err().reason.find("/nonexistent-dir/access.log"), std::string::npos);
}

}  // namespace
}  // namespace weir::server

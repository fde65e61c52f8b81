// `weir stream` against a real `weir serve` (its own data directory and port): every command, --json,
// the exit codes that tell not-found from conflict from network errors, --lines from standard input,
// exact bytes of binary streams over SSE, and `read --follow` across SIGKILL and restart of the server.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "cli_process.h"
#include "crash/server_process.h"

namespace weir::cli_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

bool contains(const std::string& s, std::string_view needle) {
  return s.find(needle) != std::string::npos;
}

std::size_t count_of(const std::string& s, std::string_view needle) {
  std::size_t n = 0;
  for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

class cli_test : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("weir_cli_it_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    server_ = std::make_unique<crash_test::server_process>(
        WEIR_BINARY, dir_ / "data", std::vector<std::string>{"--threads", "1"}, dir_ / "server.log");
    start_server("start", 0);
  }

  void TearDown() override {
    server_.reset();  // SIGKILL by PID if still running
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void start_server(const std::string& note, std::uint16_t port) {
    server_->start(note, port);
    std::string why;
    ASSERT_TRUE(server_->wait_ready(20s, why)) << why << "\n" << server_->log_tail(3000);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  std::vector<std::string> args(std::vector<std::string> rest) const {
    std::vector<std::string> a{"stream", "--server", url()};
    a.insert(a.end(), rest.begin(), rest.end());
    return a;
  }

  cli_result cli(std::vector<std::string> rest, std::string_view input = {}) const {
    return run_cli(WEIR_BINARY, args(std::move(rest)), input);
  }

  fs::path write_file(const std::string& name, std::string_view bytes) const {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  fs::path dir_;
  std::unique_ptr<crash_test::server_process> server_;
};

#define EXPECT_CLI(r, want) EXPECT_EQ((r).code, (want)) << "stdout: " << (r).out << "\nstderr: " << (r).err

TEST_F(cli_test, every_command_in_text_and_json) {
  auto r = cli({"create", "notes", "--content-type", "text/plain"});
  EXPECT_CLI(r, 0);
  EXPECT_FALSE(trimmed(r.out).empty());
  r = cli({"create", "notes", "--content-type", "text/plain", "--json"});  // identical: fine
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "\"created\":false")) << r.out;

  r = cli({"append", "notes", "one\n"});
  EXPECT_CLI(r, 0);
  const std::string after_one = trimmed(r.out);
  r = cli({"append", "notes", "--file", write_file("two", "two\nthree\n").string()});
  EXPECT_CLI(r, 0);
  r = cli({"append", "notes", "--lines", "--json"}, "four\n\nfive\n");  // the blank line is skipped
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "\"appends\":2")) << r.out;
  r = cli({"append", "notes"}, "six\n");  // standard input, one append
  EXPECT_CLI(r, 0);
  const std::string tail = trimmed(r.out);

  r = cli({"read", "notes"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "one\ntwo\nthree\nfour\nfive\nsix\n");
  r = cli({"read", "notes", "--offset", after_one});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "two\nthree\nfour\nfive\nsix\n");
  r = cli({"read", "notes", "--offset", "now", "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "{\"offset\":\"" + tail + "\",\"up_to_date\":true,\"closed\":false,\"data\":\"\"}\n");

  r = cli({"head", "notes", "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out,
            "{\"path\":\"/v1/stream/notes\",\"offset\":\"" + tail +
                "\",\"content_type\":\"text/plain\",\"closed\":false,\"ttl\":null,\"expires_at\":null}\n");

  // A fork at the offset after "one\n", named by its full path and then by its URL.
  r = cli({"fork", "notes-fork", "--from", "notes", "--offset", after_one, "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "\"created\":true")) << r.out;
  r = cli({"append", url() + "/v1/stream/notes-fork", "fork\n"});
  EXPECT_CLI(r, 0);
  r = cli({"read", "/v1/stream/notes-fork"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "one\nfork\n");

  r = cli({"close", "notes", "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "{\"path\":\"/v1/stream/notes\",\"offset\":\"" + tail + "\",\"closed\":true}\n");
  r = cli({"head", "notes"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "offset: " + tail + "\ncontent_type: text/plain\nclosed: true\n");

  r = cli({"delete", "notes-fork"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "");
  r = cli({"delete", "notes", "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "{\"path\":\"/v1/stream/notes\",\"deleted\":true}\n");
  r = cli({"head", "notes"});
  EXPECT_CLI(r, 3);
}

TEST_F(cli_test, create_with_ttl_or_expiry_and_closed_with_a_body) {
  auto r = cli({"create", "ttl", "--content-type", "text/plain", "--ttl", "3600"});
  EXPECT_CLI(r, 0);
  r = cli({"head", "ttl", "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "\"ttl\":3600")) << r.out;
  r = cli({"create", "exp", "--expires-at", "2999-01-01T00:00:00Z"});
  EXPECT_CLI(r, 0);
  r = cli({"head", "exp"});
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "expires_at: 2999-01-01T00:00:00")) << r.out;
  EXPECT_TRUE(contains(r.out, "content_type: application/octet-stream")) << r.out;
  r = cli({"create", "done", "--content-type", "text/plain", "--closed", "all of it"});
  EXPECT_CLI(r, 0);
  r = cli({"read", "done", "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "\"closed\":true,\"data\":\"all of it\"")) << r.out;
}

TEST_F(cli_test, exit_codes_tell_not_found_conflict_network_and_usage) {
  auto r = cli({"head", "missing", "--json"});
  EXPECT_CLI(r, 3);
  EXPECT_TRUE(contains(r.out, "\"error\":\"not_found\",\"path\":\"/v1/stream/missing\",\"status\":404"))
      << r.out;
  EXPECT_TRUE(contains(r.err, "404")) << r.err;
  EXPECT_CLI(cli({"read", "missing"}), 3);
  EXPECT_CLI(cli({"read", "missing", "--follow"}), 3);
  EXPECT_CLI(cli({"append", "missing", "x"}), 3);
  EXPECT_CLI(cli({"close", "missing"}), 3);
  EXPECT_CLI(cli({"delete", "missing"}), 3);
  EXPECT_CLI(cli({"fork", "f", "--from", "missing"}), 3);

  EXPECT_CLI(cli({"create", "s", "--content-type", "text/plain"}), 0);
  r = cli({"create", "s", "--content-type", "application/json", "--json"});
  EXPECT_CLI(r, 4);
  EXPECT_TRUE(contains(r.out, "\"error\":\"conflict\"")) << r.out;
  EXPECT_CLI(cli({"append", "s", "x", "--content-type", "application/json"}), 4);  // type mismatch
  EXPECT_CLI(cli({"close", "s"}), 0);
  EXPECT_CLI(cli({"close", "s"}), 0);  // idempotent
  r = cli({"append", "s", "late"});
  EXPECT_CLI(r, 4);
  EXPECT_TRUE(contains(r.err, "409")) << r.err;

  // Nothing listens on this port: no HTTP response at all.
  const auto closed_port = crash_test::free_loopback_port();
  r = run_cli(WEIR_BINARY, {"stream", "--server", "http://127.0.0.1:" + std::to_string(closed_port), "head",
                            "s", "--json"});
  EXPECT_CLI(r, 5);
  EXPECT_TRUE(contains(r.out, "\"error\":\"network\"")) << r.out;

  EXPECT_CLI(cli({"head"}), 2);
  EXPECT_CLI(cli({"frobnicate", "s"}), 2);
  EXPECT_CLI(cli({"create", "t", "--ttl", "1", "--expires-at", "2999-01-01T00:00:00Z"}), 2);
  EXPECT_CLI(cli({"append", "s"}, ""), 2);  // nothing to append
  EXPECT_CLI(run_cli(WEIR_BINARY, {"stream", "--server", "ftp://x", "head", "s"}), 2);
  r = run_cli(WEIR_BINARY, {"stream", "--help"});
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "Exit codes")) << r.out;
}

TEST_F(cli_test, lines_from_stdin_into_a_json_stream_read_back_one_message_per_line) {
  EXPECT_CLI(cli({"create", "events", "--content-type", "application/json"}), 0);
  auto r = cli({"append", "events", "--lines"}, "{\"n\": 1}\n{\"n\":2}\n\"three\"\n");
  EXPECT_CLI(r, 0);
  r = cli({"read", "events"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "{\"n\":1}\n{\"n\":2}\n\"three\"\n");
  r = cli({"read", "events", "--json"});
  EXPECT_CLI(r, 0);
  EXPECT_TRUE(contains(r.out, "\"messages\":[{\"n\":1},{\"n\":2},\"three\"]")) << r.out;
  EXPECT_CLI(cli({"append", "events", "--lines", "--close"}, "4\n"), 0);
  r = cli({"read", "events", "--follow"});  // ends with the stream's close
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "{\"n\":1}\n{\"n\":2}\n\"three\"\n4\n");
}

TEST_F(cli_test, follow_prints_the_exact_bytes_of_a_binary_stream) {
  std::string bytes("\x00\x01\r\n\r\xff bin\n", 10);
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  EXPECT_CLI(cli({"create", "blob", "--content-type", "application/octet-stream"}), 0);
  EXPECT_CLI(cli({"append", "blob", "--file", write_file("blob", bytes).string()}), 0);
  EXPECT_CLI(cli({"append", "blob", "--close"}, "\r\n"), 0);
  bytes += "\r\n";
  auto r = cli({"read", "blob", "--follow"});  // SSE sends it base64
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, bytes);
  r = cli({"read", "blob"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, bytes);

  // A text stream keeps its bytes in a catch-up read; over SSE its line ends arrive as LF (the SSE
  // format splits lines at CR, LF and CRLF).
  EXPECT_CLI(cli({"create", "text", "--content-type", "text/plain", "--closed", "x\r\ny\rz\n"}), 0);
  r = cli({"read", "text"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "x\r\ny\rz\n");
  r = cli({"read", "text", "--follow"});
  EXPECT_CLI(r, 0);
  EXPECT_EQ(r.out, "x\ny\nz\n");
}

TEST_F(cli_test, follow_survives_sigkill_and_restart_without_losing_or_repeating) {
  EXPECT_CLI(cli({"create", "feed", "--content-type", "text/plain"}), 0);
  EXPECT_CLI(cli({"append", "feed", "--lines"}, "a1\na2\na3\n"), 0);
  std::string expected = "a1\na2\na3\n";

  cli_process follower(WEIR_BINARY, args({"read", "feed", "--follow"}));
  ASSERT_TRUE(
      follower.wait_for([&](const std::string& out, const std::string&) { return out == expected; }, 30s))
      << follower.out() << follower.err();

  const auto port = server_->port();
  for (int round = 1; round <= 2; ++round) {
    std::string why;
    ASSERT_TRUE(server_->kill(why)) << why;
    // The follower notices the outage (and keeps trying) before the server comes back.
    ASSERT_TRUE(follower.wait_for(
        [&](const std::string&, const std::string& err) {
          return count_of(err, "retrying") == static_cast<std::size_t>(round);
        },
        30s))
        << follower.err();
    start_server("restart " + std::to_string(round), port);
    if (HasFatalFailure()) return;

    std::string lines;
    for (int i = 1; i <= 3; ++i) lines += "r" + std::to_string(round) + "-" + std::to_string(i) + "\n";
    EXPECT_CLI(cli({"append", "feed", "--lines"}, lines), 0);
    expected += lines;
    ASSERT_TRUE(
        follower.wait_for([&](const std::string& out, const std::string&) { return out == expected; }, 30s))
        << "stdout: " << follower.out() << "\nstderr: " << follower.err();
  }

  EXPECT_CLI(cli({"append", "feed", "--close"}, "end\n"), 0);
  expected += "end\n";
  EXPECT_EQ(follower.wait_exit(30s), 0) << follower.err();
  EXPECT_EQ(follower.out(), expected);  // nothing lost, nothing twice
  EXPECT_EQ(count_of(follower.err(), "reconnected"), 2u) << follower.err();
}

}  // namespace
}  // namespace weir::cli_test

// `weir bench` end to end: it runs against `weir serve` and writes complete, error-free results, and it
// reports a target that answers with wrong lengths or drops SSE events instead of hiding it.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "misbehaving_target.h"

namespace weir::bench_test {
namespace {

namespace fs = std::filesystem;

// A child process started with fork+exec, output to `log`, stopped by PID (SIGTERM, then SIGKILL).
class child_process {
 public:
  child_process(std::vector<std::string> args, const fs::path& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~child_process() { stop(); }

  // Waits up to `limit` for the child to exit; its exit code, or -1 if it did not exit in time.
  int wait_exit(std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0 && std::chrono::steady_clock::now() < end) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (wait_exit(std::chrono::seconds(10)) == -1 && pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool wait_for_port(std::uint16_t port, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class bench_integration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir_bench_it_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs a short `weir bench` of the many-streams, fanout and soak workloads; returns its exit code.
  int run_new_workloads(const std::vector<std::string>& targets, std::vector<std::string> extra) {
    std::vector<std::string> args{WEIR_BINARY,
                                  "bench",
                                  "--workloads",
                                  "many-streams,fanout,soak",
                                  "--streams",
                                  "20,50",
                                  "--writers",
                                  "4",
                                  "--many-secs",
                                  "1",
                                  "--subscribers",
                                  "5,20",
                                  "--fanout-events",
                                  "20",
                                  "--fanout-rate",
                                  "100",
                                  "--soak-secs",
                                  "6",
                                  "--soak-sample-secs",
                                  "2",
                                  "--soak-streams",
                                  "4",
                                  "--soak-rate",
                                  "200",
                                  "--soak-stream-appends",
                                  "20",
                                  "--out",
                                  (dir_ / "out").string()};
    for (const auto& t : targets) {
      args.push_back("--target");
      args.push_back(t);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    child_process bench(args, dir_ / "bench.log");
    const int rc = bench.wait_exit(std::chrono::seconds(200));
    if (rc != 0) ADD_FAILURE() << "weir bench exit " << rc << "\n" << read_file(dir_ / "bench.log");
    return rc;
  }

  // Runs a short `weir bench` against `targets`; returns its exit code.
  int run_bench(const std::vector<std::string>& targets, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{WEIR_BINARY,
                                  "bench",
                                  "--concurrency",
                                  "2,4",
                                  "--throughput-secs",
                                  "1",
                                  "--latency-count",
                                  "10",
                                  "--sse-count",
                                  "10",
                                  "--sse-readers",
                                  "2",
                                  "--read-payload-bytes",
                                  "131072",
                                  "--out",
                                  (dir_ / "out").string()};
    for (const auto& t : targets) {
      args.push_back("--target");
      args.push_back(t);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    child_process bench(args, dir_ / "bench.log");
    const int rc = bench.wait_exit(std::chrono::seconds(200));
    if (rc != 0) ADD_FAILURE() << "weir bench exit " << rc << "\n" << read_file(dir_ / "bench.log");
    return rc;
  }

  fs::path dir_;
};

const char* const run_fields[] = {"append_p50_ms", "append_p99_ms", "read_p99_ms", "write_mib_s",
                                  "read_mib_s",    "small_req_s",   "sse_p50_ms",  "sse_p99_ms"};

TEST_F(bench_integration, results_against_weir_serve_are_complete_and_error_free) {
  const auto port = free_port();
  child_process serve({WEIR_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--data-dir",
                       (dir_ / "data").string(), "--threads", "1"},
                      dir_ / "serve.log");
  ASSERT_TRUE(wait_for_port(port, std::chrono::seconds(20))) << read_file(dir_ / "serve.log");
  ASSERT_EQ(run_bench({"weir=http://127.0.0.1:" + std::to_string(port)}), 0);
  serve.stop();

  const auto json = read_file(dir_ / "out" / "results.json");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::array runs;
  ASSERT_EQ(doc["runs"].get_array().get(runs), simdjson::SUCCESS);
  ASSERT_EQ(runs.size(), 2u);
  std::uint64_t level = 2;
  for (auto run : runs) {
    std::string_view target;
    ASSERT_EQ(run["target"].get_string().get(target), simdjson::SUCCESS);
    EXPECT_EQ(target, "weir");
    std::uint64_t c = 0, errors = 1;
    ASSERT_EQ(run["concurrency"].get_uint64().get(c), simdjson::SUCCESS);
    EXPECT_EQ(c, level);
    level *= 2;
    for (const char* field : run_fields) {
      double v = -1;
      ASSERT_EQ(run[field].get_double().get(v), simdjson::SUCCESS) << field << " missing or null in\n"
                                                                   << json;
      EXPECT_GT(v, 0.0) << field;
    }
    ASSERT_EQ(run["errors"].get_uint64().get(errors), simdjson::SUCCESS);
    EXPECT_EQ(errors, 0u) << json;
    std::uint64_t delivered = 0, expected = 0;
    ASSERT_EQ(run["counts"]["sse_events_delivered"].get_uint64().get(delivered), simdjson::SUCCESS);
    ASSERT_EQ(run["counts"]["sse_events_expected"].get_uint64().get(expected), simdjson::SUCCESS);
    EXPECT_EQ(expected, c * 2 * 10);  // streams x readers x events
    EXPECT_EQ(delivered, expected);
    double cpu = -1;
    ASSERT_EQ(run["client_cpu"]["write"]["share"].get_double().get(cpu), simdjson::SUCCESS);
    EXPECT_GE(cpu, 0.0);
  }
  const auto md = read_file(dir_ / "out" / "results.md");
  EXPECT_NE(md.find("| Metric | weir |"), std::string::npos) << md;
  for (const char* field : run_fields) {
    const auto svg = read_file(dir_ / "out" / (std::string(field) + ".svg"));
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << field;
    EXPECT_NE(svg.find(">weir<"), std::string::npos) << field;
  }
}

TEST_F(bench_integration, a_target_with_short_reads_and_dropped_events_is_reported_with_errors) {
  misbehaving_target fake;
  ASSERT_EQ(run_bench({"fake=http://127.0.0.1:" + std::to_string(fake.port())},
                      {"--request-timeout-ms", "3000", "--sse-timeout-ms", "500"}),
            0);
  const auto json = read_file(dir_ / "out" / "results.json");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::array runs;
  ASSERT_EQ(doc["runs"].get_array().get(runs), simdjson::SUCCESS);
  ASSERT_EQ(runs.size(), 2u);
  for (auto run : runs) {
    std::uint64_t c = 0, errors = 0, short_reads = 0, missing = 0, delivered = 0, expected = 0;
    ASSERT_EQ(run["concurrency"].get_uint64().get(c), simdjson::SUCCESS);
    ASSERT_EQ(run["errors"].get_uint64().get(errors), simdjson::SUCCESS);
    ASSERT_EQ(run["error_kinds"]["read.short"].get_uint64().get(short_reads), simdjson::SUCCESS) << json;
    ASSERT_EQ(run["error_kinds"]["sse.missing"].get_uint64().get(missing), simdjson::SUCCESS) << json;
    ASSERT_EQ(run["counts"]["sse_events_delivered"].get_uint64().get(delivered), simdjson::SUCCESS);
    ASSERT_EQ(run["counts"]["sse_events_expected"].get_uint64().get(expected), simdjson::SUCCESS);
    EXPECT_GT(short_reads, 0u);
    // The fake forwards the 1st, 3rd, 5th... append of each stream: half of the 10 events go missing.
    EXPECT_EQ(expected, c * 2 * 10);
    EXPECT_EQ(missing, expected / 2) << json;
    EXPECT_EQ(delivered, expected / 2);
    EXPECT_GE(errors, short_reads + missing);
    // Appends were answered correctly: they are measured, not counted as errors.
    double write = 0;
    ASSERT_EQ(run["write_mib_s"].get_double().get(write), simdjson::SUCCESS);
    EXPECT_GT(write, 0.0);
  }
}

std::uint64_t uint_at(simdjson::dom::element e, std::string_view key) {
  std::uint64_t v = 0;
  EXPECT_EQ(e[key].get_uint64().get(v), simdjson::SUCCESS) << key;
  return v;
}

double double_at(simdjson::dom::element e, std::string_view key) {
  double v = -1;
  EXPECT_EQ(e[key].get_double().get(v), simdjson::SUCCESS) << key << " missing or null";
  return v;
}

TEST_F(bench_integration, many_streams_fanout_and_soak_against_weir_serve_are_complete_and_error_free) {
  const auto port = free_port();
  child_process serve({WEIR_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--data-dir",
                       (dir_ / "data").string(), "--threads", "1"},
                      dir_ / "serve.log");
  ASSERT_TRUE(wait_for_port(port, std::chrono::seconds(20))) << read_file(dir_ / "serve.log");
  ASSERT_EQ(run_new_workloads({"weir=http://127.0.0.1:" + std::to_string(port)},
                              {"--server-pid", "weir=" + std::to_string(serve.pid()), "--info", "weir=test"}),
            0);
  serve.stop();

  const auto json = read_file(dir_ / "out" / "results.json");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::array arr;
  ASSERT_EQ(doc["runs"].get_array().get(arr), simdjson::SUCCESS);
  EXPECT_EQ(arr.size(), 0u);  // the seed workloads were not asked for

  ASSERT_EQ(doc["many_streams"].get_array().get(arr), simdjson::SUCCESS);
  ASSERT_EQ(arr.size(), 2u);
  std::uint64_t level = 20;
  for (auto r : arr) {
    EXPECT_EQ(uint_at(r, "streams"), level);
    level = 50;
    EXPECT_EQ(uint_at(r, "writers"), 4u);
    EXPECT_GT(double_at(r, "ops_s"), 0.0);
    EXPECT_GT(double_at(r, "p99_ms"), 0.0);
    EXPECT_GE(double_at(r, "p99_ms"), double_at(r, "p50_ms"));
    EXPECT_EQ(uint_at(r, "errors"), 0u) << json;
    EXPECT_EQ(uint_at(r["counts"], "streams_created"), uint_at(r, "streams"));
  }

  ASSERT_EQ(doc["fanout"].get_array().get(arr), simdjson::SUCCESS);
  ASSERT_EQ(arr.size(), 2u);
  for (auto r : arr) {
    const auto subscribers = uint_at(r, "subscribers");
    EXPECT_EQ(uint_at(r, "expected"), subscribers * 20);
    EXPECT_EQ(uint_at(r, "delivered"), subscribers * 20) << json;
    EXPECT_EQ(uint_at(r, "lost"), 0u);
    EXPECT_EQ(uint_at(r, "duplicated"), 0u);
    EXPECT_EQ(uint_at(r, "errors"), 0u) << json;
    EXPECT_GT(double_at(r, "p99_ms"), 0.0);
    EXPECT_GE(double_at(r, "max_ms"), double_at(r, "p99_ms"));
  }

  ASSERT_EQ(doc["soak"].get_array().get(arr), simdjson::SUCCESS);
  ASSERT_EQ(arr.size(), 1u);
  auto soak = arr.at(0).value();
  EXPECT_EQ(uint_at(soak, "errors"), 0u) << json;
  simdjson::dom::array samples;
  ASSERT_EQ(soak["samples"].get_array().get(samples), simdjson::SUCCESS);
  ASSERT_GE(samples.size(), 1u);  // at 2, 4 and 6 s; a boundary the loop was late for is skipped
  EXPECT_LE(samples.size(), 3u);
  double last_t = 0;
  ASSERT_EQ(samples.at(samples.size() - 1)["t_s"].get_double().get(last_t), simdjson::SUCCESS);
  EXPECT_DOUBLE_EQ(last_t, 6.0);
  for (auto s : samples) {
    EXPECT_GT(double_at(s, "rss_mib"), 0.0);  // read from /proc/<serve's pid>
    EXPECT_GT(double_at(s, "fds"), 0.0);
  }
  simdjson::dom::element counts;
  ASSERT_EQ(soak["counts"].get(counts), simdjson::SUCCESS);
  EXPECT_GT(uint_at(counts, "appends"), 0u);
  EXPECT_GT(uint_at(counts, "reads"), 0u);
  EXPECT_GT(uint_at(counts, "longpoll_data"), 0u);
  EXPECT_GT(uint_at(counts, "sse_events"), 0u);
  EXPECT_GT(uint_at(counts, "streams_deleted"), 0u);  // streams were rotated
  double server_cpu = -1;
  ASSERT_EQ(doc["targets"].at(0)["server_cpu_s"].get_double().get(server_cpu), simdjson::SUCCESS);
  EXPECT_GT(server_cpu, 0.0);

  const auto html = read_file(dir_ / "out" / "report.html");
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("<td>weir</td><td>test</td>"), std::string::npos);
  EXPECT_NE(html.find("Soak: server resident memory"), std::string::npos);
  for (const char* chart : {"many_streams_ops_s", "fanout_p99_ms", "soak_rss_mib", "soak_fds"}) {
    EXPECT_NE(read_file(dir_ / "out" / (std::string(chart) + ".svg")).find("</svg>"), std::string::npos)
        << chart;
  }
}

TEST_F(bench_integration, fanout_reports_the_lost_and_duplicated_events_of_a_misbehaving_target) {
  misbehaving_target fake;
  ASSERT_EQ(run_new_workloads({"fake=http://127.0.0.1:" + std::to_string(fake.port())},
                              {"--workloads", "fanout", "--sse-timeout-ms", "500"}),
            0);
  const auto json = read_file(dir_ / "out" / "results.json");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::array arr;
  ASSERT_EQ(doc["fanout"].get_array().get(arr), simdjson::SUCCESS);
  ASSERT_EQ(arr.size(), 2u);
  for (auto r : arr) {
    const auto subscribers = uint_at(r, "subscribers");
    // The fake forwards appends 1, 3, 5, ... (10 of 20) and sends 1, 5, 9, 13, 17 twice.
    EXPECT_EQ(uint_at(r, "expected"), subscribers * 20);
    EXPECT_EQ(uint_at(r, "delivered"), subscribers * 10) << json;
    EXPECT_EQ(uint_at(r, "lost"), subscribers * 10);
    EXPECT_EQ(uint_at(r, "duplicated"), subscribers * 5);
    EXPECT_EQ(uint_at(r["error_kinds"], "fanout.missing"), subscribers * 10);
    EXPECT_EQ(uint_at(r["error_kinds"], "fanout.duplicate"), subscribers * 5);
  }
  EXPECT_NE(read_file(dir_ / "out" / "report.html").find("events lost"), std::string::npos);
  EXPECT_EQ(doc["many_streams"].get_array().get(arr), simdjson::SUCCESS);
  EXPECT_EQ(arr.size(), 0u);  // --workloads fanout: the later value wins
}

}  // namespace
}  // namespace weir::bench_test

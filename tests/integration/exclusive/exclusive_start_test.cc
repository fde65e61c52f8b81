// A second `weir serve` on the same data directory, or on the same listen address, must refuse to start
// (two writers on one log lose streams; a second process in the port's SO_REUSEPORT group takes half of
// the connections), and the first must keep serving. Real processes, real ports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "crash/blocking_client.h"
#include "crash/server_process.h"

namespace weir::crash_test {
namespace {

using namespace std::chrono_literals;

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("weir-excl-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Waits (bounded) for a process that should refuse to start; false if it is still running.
bool exits_on_its_own(server_process& p, std::string& why) {
  auto end = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < end) {
    if (!p.alive(why)) return true;
    std::this_thread::sleep_for(20ms);  // polling a child's exit status: there is no event to wait on
  }
  return false;
}

// Every one of `n` fresh connections reaches the first process: the stream it created is there.
void first_still_serves_everyone(std::uint16_t port, const std::string& stream, int n) {
  for (int i = 0; i < n; ++i) {
    blocking_client c(port);
    auto r = c.request("GET", stream + "?offset=-1");
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.status, 200) << "connection " << i << " reached a process without the stream";
    EXPECT_EQ(r.body, "hello");
  }
}

void create_with_data(std::uint16_t port, const std::string& stream) {
  blocking_client c(port);
  auto r = c.request("PUT", stream, {{"Content-Type", "text/plain"}});
  ASSERT_EQ(r.status, 201) << r.error;
  r = c.request("POST", stream, {{"Content-Type", "text/plain"}}, "hello");
  ASSERT_EQ(r.status, 204) << r.error;
}

TEST(exclusive_start, a_second_process_on_the_data_directory_refuses_and_names_the_holder) {
  auto dir = fresh_dir("dir");
  server_process first(WEIR_BINARY, dir, {}, dir / "first.log");
  first.start("first");
  std::string why;
  ASSERT_TRUE(first.wait_ready(20s, why)) << why << first.log_tail(2000);
  create_with_data(first.port(), "/v1/stream/a");

  server_process second(WEIR_BINARY, dir, {},
                        dir.parent_path() / ("weir-excl-second-" + std::to_string(::getpid()) + ".log"));
  second.start("second");  // another port, same directory
  ASSERT_TRUE(exits_on_its_own(second, why)) << "the second process is serving the same data directory";
  EXPECT_EQ(why, "exited with code 1");
  std::string log =
      read_file(dir.parent_path() / ("weir-excl-second-" + std::to_string(::getpid()) + ".log"));
  EXPECT_NE(log.find("data directory " + dir.string() + " is in use by another process (pid " +
                     std::to_string(first.pid())),
            std::string::npos)
      << log;

  first_still_serves_everyone(first.port(), "/v1/stream/a", 10);
  ASSERT_TRUE(first.kill(why)) << why;
  std::filesystem::remove(dir.parent_path() / ("weir-excl-second-" + std::to_string(::getpid()) + ".log"));
  std::filesystem::remove_all(dir);
}

TEST(exclusive_start, a_second_process_on_the_port_refuses_and_the_first_keeps_every_connection) {
  auto dir1 = fresh_dir("port1");
  auto dir2 = fresh_dir("port2");
  server_process first(WEIR_BINARY, dir1, {"--threads", "2"},
                       dir1.parent_path() / (dir1.filename().string() + ".log"));
  first.start("first");
  std::string why;
  ASSERT_TRUE(first.wait_ready(20s, why)) << why << first.log_tail(2000);
  create_with_data(first.port(), "/v1/stream/b");

  const auto log2 = dir2.parent_path() / (dir2.filename().string() + ".log");
  server_process second(WEIR_BINARY, dir2, {"--threads", "2"}, log2);
  second.start("second", first.port());
  ASSERT_TRUE(exits_on_its_own(second, why)) << "the second process shares the port";
  EXPECT_EQ(why, "exited with code 1");
  std::string log = read_file(log2);
  EXPECT_NE(log.find("already served by another weir process"), std::string::npos) << log;

  // Before the fix half of these reached the second process and answered 404.
  first_still_serves_everyone(first.port(), "/v1/stream/b", 40);
  ASSERT_TRUE(first.kill(why)) << why;
  std::filesystem::remove(log2);
  std::filesystem::remove(dir1.parent_path() / (dir1.filename().string() + ".log"));
  std::filesystem::remove_all(dir1);
  std::filesystem::remove_all(dir2);
}

}  // namespace
}  // namespace weir::crash_test

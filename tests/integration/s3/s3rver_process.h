// s3rver_process: one s3rver child (tests/integration/s3/s3rver.mjs under `node --openssl-legacy-provider`)
// for the S3 client's integration test, on 127.0.0.1 and a port the OS picks (read back from its first
// line of output), with its files in a fresh directory under /tmp. Stopped by its PID (SIGTERM, then
// SIGKILL) in the destructor; PR_SET_PDEATHSIG makes a crashing test take it along. Main thread only.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace weir::tier::test {

class s3rver_process {
 public:
  static constexpr const char* bucket = "weir-test";
  static constexpr const char* access_key = "S3RVER";  // s3rver's built-in account
  static constexpr const char* secret_key = "S3RVER";

  s3rver_process();
  ~s3rver_process();
  s3rver_process(const s3rver_process&) = delete;
  s3rver_process& operator=(const s3rver_process&) = delete;

  // Starts it and waits for its port line. False (with `why`) if it did not come up.
  bool start(std::string& why);
  std::uint16_t port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Its process (a test stalls the bucket with SIGSTOP and lets it go on with SIGCONT).
  pid_t pid() const { return pid_; }

 private:
  void stop();
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::uint16_t port_ = 0;
  std::filesystem::path dir_;
};

// A port on 127.0.0.1 that nothing listens on right now.
std::uint16_t free_loopback_port();

// The base of a test suite whose tests share one s3rver (server_), started before the first test and
// stopped after the last.
class s3rver_suite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new s3rver_process();
    std::string why;
    ASSERT_TRUE(server_->start(why)) << why;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static inline s3rver_process* server_ = nullptr;
};

}  // namespace weir::tier::test

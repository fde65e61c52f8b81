// A fixture for tests of a durable node on a temporary data directory: start / stop / restart it on the
// same directory, with settings a test may change (cfg_) before start().
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/node.h"
#include "unit/server/http_test_client.h"

namespace weir::server::test_support {

class durable_node_fixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "weir-durable-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    cfg_.port = 0;
    cfg_.threads = 2;
    cfg_.data_dir = dir_;
  }
  void TearDown() override {
    stop();
    std::filesystem::remove_all(dir_);
  }
  status start() {
    n_ = std::make_unique<node>(cfg_, env_);
    status st = n_->start();
    if (!st) {
      n_.reset();
      return st;
    }
    port_ = n_->port();
    runner_ = std::thread([this] { n_->run(false); });
    return {};
  }
  void stop() {
    if (!n_) return;
    n_->stop();
    runner_.join();
    n_.reset();
  }
  // The files of core `core`'s log directory whose names end with `suffix`, sorted.
  std::vector<std::string> files(unsigned core, const std::string& suffix) const {
    std::vector<std::string> out;
    for (auto& e : std::filesystem::directory_iterator(dir_ + "/wal/core-" + std::to_string(core))) {
      std::string p = e.path().string();
      if (p.ends_with(suffix)) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The newest segment file of core `core`.
  std::string segment(unsigned core) const {
    auto all = files(core, ".log");
    return all.empty() ? std::string() : all.back();
  }

  serve_config cfg_;
  storage::env* env_ = nullptr;  // null: the real file system
  std::string dir_;
  std::unique_ptr<node> n_;
  std::uint16_t port_ = 0;
  std::thread runner_;
};

}  // namespace weir::server::test_support

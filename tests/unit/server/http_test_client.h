// A blocking one-request HTTP client for the server tests: one request on a fresh connection
// (Connection: close), read to EOF. Test code only: the product's client lives in bench/ and src/io.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <map>
#include <string>

#include "server/node.h"

namespace weir::server::test_support {

struct reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// A blocking connection to 127.0.0.1:port whose reads give up after `timeout_s` seconds.
inline int connect_loopback(std::uint16_t port, int timeout_s) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// One request on a fresh connection (Connection: close), read to EOF.
inline reply http(std::uint16_t port, const std::string& method, const std::string& path,
                  const std::map<std::string, std::string>& headers = {}, const std::string& body = "") {
  int fd = connect_loopback(port, 10);
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string raw;
  char buf[4096];
  for (int i = 0; i < 10000; ++i) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  reply r;
  auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  std::size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    auto eol = raw.find("\r\n", pos);
    std::string line = raw.substr(pos, eol - pos);
    auto colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = line.substr(colon + 2);
    pos = eol + 2;
  }
  r.body = raw.substr(head_end + 4);
  return r;
}

// Headers of an idempotent producer's append: producer "p", epoch 0, sequence `seq`.
inline std::map<std::string, std::string> producer_headers(const std::string& content_type, int seq) {
  return {{"Content-Type", content_type},
          {"Producer-Id", "p"},
          {"Producer-Epoch", "0"},
          {"Producer-Seq", std::to_string(seq)}};
}

// A stream path under /v1/stream/ that a 2-core node gives to core `core`.
inline std::string path_on(unsigned core, const std::string& stem) {
  for (int i = 0; i < 1000; ++i) {
    std::string p = "/v1/stream/" + stem + std::to_string(i);
    if (owner_index(p, 2) == core) return p;
  }
  ADD_FAILURE() << "no path for core " << core;
  return {};
}

}  // namespace weir::server::test_support

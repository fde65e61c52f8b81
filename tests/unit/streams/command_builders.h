// Test helpers for the streams tests: commands built with the fields a test cares about, and fork
// resolution run the way the server runs it (fork_retain on the source's machine first).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "streams/state_machine.h"

namespace weir::streams::testing {

constexpr std::int64_t t0 = 1'700'000'000'000;

// The sources an outcome's releases name (in order).
inline std::vector<std::string> sources(const std::vector<fork_release_command>& releases) {
  std::vector<std::string> out;
  for (const auto& r : releases) out.push_back(r.source);
  return out;
}

inline payload bytes(std::string s, std::uint32_t messages = 0) {
  payload p;
  if (!s.empty()) p.bytes = make_chunk(std::move(s));
  p.messages = messages;
  return p;
}

inline create_command make_create(std::string path, std::string ct = "text/plain", std::string body = "",
                                  std::int64_t now = t0) {
  create_command c;
  c.path = std::move(path);
  c.content_type = std::move(ct);
  c.initial = bytes(std::move(body));
  c.now_ms = now;
  return c;
}

inline append_command make_append(std::string path, std::string body, std::int64_t now = t0) {
  append_command c;
  c.path = std::move(path);
  c.body = bytes(std::move(body));
  c.now_ms = now;
  return c;
}

// fork_retain on `src`, then the fork_spec a create of the fork carries (no sub-offset).
inline fork_spec resolve_fork(state_machine& src, std::string source, std::optional<std::uint64_t> offset,
                              std::int64_t now = t0) {
  fork_retain_command r;
  r.source = std::move(source);
  if (offset) r.offset = stream_offset(*offset);
  r.now_ms = now;
  outcome o = src.fork_retain(r);
  EXPECT_EQ(o.code, errc::ok);
  fork_spec f;
  f.source = r.source;
  f.offset = r.offset;
  if (o.resolution) {
    f.resolved = *o.resolution;
    f.resolved.retained = true;
  }
  return f;
}

}  // namespace weir::streams::testing

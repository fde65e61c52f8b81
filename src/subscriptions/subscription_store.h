// subscription_store: what of a subscription survives a restart (`persisted_subscription`: config,
// links and cursors, generation, retry schedule), the config's persisted JSON form, and the JSON snapshot
// (<data_dir>/subscriptions.json) that weir wrote before subscription_log existed: it is still read once,
// to migrate. Wakes, leases and tokens are not persisted: after a restart the token secret is new, so
// every in-flight wake is void anyway and pending work is simply woken again. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_writer.h"
#include "base/result.h"
#include "subscriptions/subscription_config.h"
#include "subscriptions/subscription_state.h"

namespace weir::subscriptions {

enum class store_errc { io = 1, corrupt };

struct persisted_subscription {
  std::string root;
  std::string origin;
  std::string id;
  subscription_config config;
  std::int64_t created_at_wall_ms = 0;
  std::map<std::string, stream_link> links;
  std::uint64_t generation = 0;
  bool failed = false;
  int failed_attempts = 0;
  std::int64_t retry_at_wall_ms = 0;  // 0 = no retry scheduled (PROTOCOL.md 7.1: next_attempt_at)
  bool paused = false;                // max-webhook-retries reached
};

// The config as JSON in the PUT body shape, and back (re-validated by the same parser, leniently).
void write_persisted_config(json_writer& w, const subscription_config& c);
result<subscription_config> read_persisted_config(std::string_view json);

std::string encode_snapshot(const std::vector<persisted_subscription>& subs);
result<std::vector<persisted_subscription>> decode_snapshot(std::string_view text);

// nullopt when the file does not exist.
result<std::optional<std::string>> read_snapshot_file(const std::string& path);

}  // namespace weir::subscriptions

// Random operation sequences against subscription_state (fixed seeds, bounded), checking the invariants
// of PROTOCOL.md 7: cursors never move backwards, generations only grow, at most one wake exists and it
// carries the current generation, a held pull-wake lease has a deadline, and a subscription with
// pending work and nothing in flight can always start a wake (unless paused). And persistence misses
// nothing: applying only what changed_links() and counters_changed() report to a mirror of the persisted
// fields (as subscription_log does) always gives the state's own persisted fields.
#include <gtest/gtest.h>

#include <random>

#include "subscriptions/subscription_state.h"

namespace weir::subscriptions {
namespace {

std::string offset(int n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016d_%016d", 0, n);
  return buf;
}

void run_sequence(delivery_type type, unsigned seed) {
  subscription_config cfg;
  cfg.type = type;
  cfg.pattern = "s/*";
  if (type == delivery_type::webhook) {
    cfg.webhook_url = "https://w.example/h";
  } else {
    cfg.wake_stream = "wake";
  }
  cfg.lease_ttl_ms = 1000;
  subscription_state s("rand", cfg, 0);
  std::mt19937 rng(seed);
  const std::vector<std::string> paths{"s/a", "s/b", "s/c"};
  std::map<std::string, int> length;
  std::int64_t now = 0;
  std::uint64_t last_gen = 0;
  std::map<std::string, std::string> last_acked;
  int wakes = 0;
  struct mirror_link {
    bool explicit_link = false;
    bool glob_link = false;
    std::string acked;
    bool operator==(const mirror_link&) const = default;
  };
  struct mirror_counters {
    std::uint64_t generation = 0;
    bool failed = false;
    int attempts = 0;
    std::int64_t retry_at = 0;
    bool paused = false;
    bool operator==(const mirror_counters&) const = default;
  };
  auto counters_of = [&] {
    return mirror_counters{s.generation(), s.failed(), s.failed_attempts(), s.retry_at_ms(), s.paused()};
  };
  std::map<std::string, mirror_link> persisted_links;
  mirror_counters persisted_counters;

  for (int step = 0; step < 2000; ++step) {
    int op = static_cast<int>(rng() % 13);
    const std::string& p = paths[rng() % paths.size()];
    switch (op) {
      case 0: {  // append
        length[p] += 1 + static_cast<int>(rng() % 3);
        if (!s.linked(p)) {
          s.link_at_start(p, false, offset(length[p]));
        } else {
          s.on_tail(p, offset(length[p]));
        }
        break;
      }
      case 1:
        if (s.try_start_wake(now, "w" + std::to_string(step))) ++wakes;
        break;
      case 2: {
        bool busy = false;
        if (type == delivery_type::pull_wake) s.claim("worker", now, "c" + std::to_string(step), busy);
        break;
      }
      case 3: {  // ack (maybe done) for the current wake, offsets within the snapshot
        const auto& w = s.current_wake();
        if (!w || s.check_fence(w->generation, w->wake_id) != fence_result::ok) break;
        std::vector<stream_ack> acks;
        for (const auto& e : w->snapshot) {
          if (rng() % 2) acks.push_back({e.path, e.tail_offset});
          // A stale (smaller) offset now and then: the cursor must not follow it back.
          if (rng() % 4 == 0)
            acks.push_back({e.path, offset(static_cast<int>(rng() % (length[e.path] + 1)))});
        }
        ASSERT_TRUE(s.apply_acks(acks));
        s.finish_or_extend(rng() % 2 == 0, now);
        break;
      }
      case 4:
        if (s.current_wake() &&
            s.check_fence(s.current_wake()->generation, s.current_wake()->wake_id) == fence_result::ok) {
          s.release();
        }
        break;
      case 5:
        now += static_cast<std::int64_t>(rng() % 700);
        if (s.current_wake()) s.expire_lease(s.current_wake()->generation, now);
        break;
      case 6:
        if (s.current_wake() && type == delivery_type::webhook)
          s.on_delivered(s.current_wake()->generation, rng() % 2);
        break;
      case 7:
        if (s.current_wake() && !s.current_wake()->holder) {
          s.on_delivery_failed(s.current_wake()->generation, now, 0.0);
        }
        break;
      case 8:
        if (s.retry_at_ms() != 0 && now >= s.retry_at_ms()) s.on_retry_due();
        now += 100;
        break;
      // Membership changes only between wakes: a wake's snapshot names its links (acks of an unlinked or
      // re-created stream are the manager's business, answered 400, not this model's).
      case 9:  // the stream is deleted: a glob link goes, an explicit one starts over
        if (s.current_wake()) break;
        s.on_deleted(p);
        length[p] = 0;
        last_acked.erase(p);
        break;
      case 10:  // created again under a link
        if (s.linked(p) && !s.current_wake()) {
          length[p] = 0;
          s.on_created(p, offset(0));
          last_acked.erase(p);
        }
        break;
      case 11:  // explicit membership (PROTOCOL.md 6.4)
        if (rng() % 2) {
          s.link_at_start(p, true, length[p] ? std::optional<std::string>(offset(length[p])) : std::nullopt);
        } else if (!s.current_wake()) {
          s.unlink_explicit(p);
        }
        break;
      case 12:  // a failure under a retry cap, and the re-confirmation that resumes
        if (s.current_wake() && !s.current_wake()->holder) {
          s.on_delivery_failed(s.current_wake()->generation, now, 0.0, 3);
        } else if (s.paused() && rng() % 2) {
          s.resume();
        }
        break;
    }
    for (const auto& path : paths) {
      if (!s.linked(path)) last_acked.erase(path);  // a new link starts at its own cursor
    }
    // What the log would record.
    for (const auto& path : s.changed_links()) {
      auto it = s.links().find(path);
      if (it == s.links().end()) {
        persisted_links.erase(path);
      } else {
        persisted_links[path] = {it->second.explicit_link, it->second.glob_link, it->second.acked_offset};
      }
    }
    if (s.counters_changed()) persisted_counters = counters_of();
    s.take_changes();
    std::map<std::string, mirror_link> actual;
    for (const auto& [path, l] : s.links()) actual[path] = {l.explicit_link, l.glob_link, l.acked_offset};
    ASSERT_TRUE(actual == persisted_links)
        << "a link change was not reported at step " << step << " (op " << op << ")";
    ASSERT_TRUE(counters_of() == persisted_counters)
        << "a counter change was not reported at step " << step << " (op " << op << ")";
    // Invariants.
    ASSERT_GE(s.generation(), last_gen) << "step " << step;
    last_gen = s.generation();
    if (const auto& w = s.current_wake()) {
      ASSERT_EQ(w->generation, s.generation()) << "step " << step;
      if (w->holder || type == delivery_type::webhook) {
        ASSERT_GT(w->lease_deadline_ms, 0) << "step " << step;
      }
    }
    for (const auto& [path, link] : s.links()) {
      auto it = last_acked.find(path);
      if (it != last_acked.end()) {
        ASSERT_FALSE(offset_after(it->second, link.acked_offset)) << path << " went back at step " << step;
      }
      last_acked[path] = link.acked_offset;
      if (link.tail_offset) {
        ASSERT_FALSE(offset_after(link.acked_offset, *link.tail_offset)) << path << " acked past its tail";
      }
    }
    if (!s.current_wake() && s.retry_at_ms() == 0 && !s.paused() && s.has_pending()) {
      subscription_state copy = s;
      ASSERT_NE(copy.try_start_wake(now, "probe"), nullptr) << "stuck with pending work at step " << step;
    }
  }
  EXPECT_GT(wakes, 10);  // the sequence exercised the wake path
}

TEST(subscription_state_random, webhook_invariants_hold) {
  for (unsigned seed = 1; seed <= 20; ++seed) run_sequence(delivery_type::webhook, seed);
}

TEST(subscription_state_random, pull_wake_invariants_hold) {
  for (unsigned seed = 1; seed <= 20; ++seed) run_sequence(delivery_type::pull_wake, seed);
}

}  // namespace
}  // namespace weir::subscriptions

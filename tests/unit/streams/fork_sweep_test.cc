// fork_sweep over fake ports: one state machine stands for every group, proposals apply to it at the
// next step of a manual queue (never inside the call), and the test decides leadership and failures.
#include "streams/fork_sweep.h"

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "streams/command_codec.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

struct harness {
  state_machine sm;
  std::deque<std::function<void()>> queue;  // what the ports answer, run by drain()
  std::vector<std::string> proposed;        // kinds and paths, in order
  bool leader = true;
  bool fail_proposals = false;
  std::uint64_t next_index = 100;
  // Runs just before a proposal applies (a create that commits between the read and the tombstone).
  std::function<void()> before_apply;
  std::unique_ptr<fork_sweep> sweep;

  static std::uint32_t group_of(std::string_view path) { return path.starts_with("/a/") ? 0 : 1; }

  explicit harness(std::int64_t min_age_ms = 1000) {
    fork_sweep::ports p;
    p.leads = [this](std::uint32_t) { return leader; };
    p.group_of = group_of;
    p.find_fork = [this](std::uint32_t, const std::string& fork, const fork_origin& origin,
                         std::function<void(std::optional<bool>)> found) {
      queue.push_back(
          [this, fork, origin, found = std::move(found)] { found(sm.fork_exists(fork, origin)); });
    };
    p.propose = [this](const command& c, std::function<void(const outcome*)> done) {
      proposed.push_back(std::to_string(static_cast<int>(static_cast<std::uint8_t>(encode(c)[0]))) + " " +
                         command_path(c));
      queue.push_back([this, c, done = std::move(done)] {
        if (fail_proposals) return done(nullptr);
        if (before_apply) std::exchange(before_apply, nullptr)();
        sm.set_entry_place(group_of(command_path(c)), next_index++);
        outcome o = sm.apply(c);
        done(&o);
      });
    };
    sweep = std::make_unique<fork_sweep>(sm, std::move(p), min_age_ms);
  }
  void drain() {
    while (!queue.empty()) {
      auto fn = std::move(queue.front());
      queue.pop_front();
      fn();
    }
  }
  // A source in group 0 and a retain naming `fork` (group 1) at index `index`, taken at `now`.
  fork_spec retain(std::uint64_t index, const std::string& fork, std::int64_t now = t0) {
    if (!sm.log_of("/a/src")) {
      sm.set_entry_place(0, 1);
      EXPECT_EQ(sm.create(make_create("/a/src", "text/plain", "abc")).code, errc::ok);
    }
    sm.set_entry_place(0, index);
    fork_retain_command r{"/a/src", std::nullopt, 0, "", now, fork};
    outcome o = sm.fork_retain(r);
    fork_spec f;
    f.source = "/a/src";
    f.resolved = *o.resolution;
    f.resolved.retained = true;
    return f;
  }
  void create(const std::string& path, const fork_spec& f) {
    create_command c = make_create(path, "");
    c.fork = f;
    sm.set_entry_place(1, next_index++);
    ASSERT_EQ(sm.create(c).code, errc::ok);
  }
};

TEST(fork_sweep, a_reference_whose_fork_exists_is_kept_without_a_proposal) {
  harness h;
  h.create("/b/f", h.retain(2, "/b/f"));
  h.sweep->run(t0 + 5000);
  h.drain();
  EXPECT_FALSE(h.sweep->running());
  EXPECT_TRUE(h.proposed.empty());
  EXPECT_EQ(h.sweep->stats().kept, 1u);
  EXPECT_EQ(h.sweep->stats().recovered, 0u);
}

TEST(fork_sweep, a_reference_without_its_fork_gets_a_tombstone_then_its_release) {
  harness h;
  (void)h.retain(2, "/b/lost");
  h.sweep->run(t0 + 5000);
  h.drain();
  EXPECT_EQ(h.proposed, (std::vector<std::string>{"12 /b/lost", "11 /a/src"}));
  EXPECT_EQ(h.sweep->stats().tombstoned, 1u);
  EXPECT_EQ(h.sweep->stats().recovered, 1u);
  EXPECT_FALSE(h.sm.holds_reference("/a/src", fork_origin{0, 2}));
  EXPECT_EQ(h.sm.tombstones(), 1u);
  // A second pass finds nothing to do.
  h.proposed.clear();
  h.sweep->run(t0 + 6000);
  h.drain();
  EXPECT_TRUE(h.proposed.empty());
}

TEST(fork_sweep, a_soft_deleted_source_is_erased_by_the_recovered_release) {
  harness h;
  (void)h.retain(2, "/b/lost");
  h.sm.set_entry_place(0, 3);
  ASSERT_EQ(h.sm.remove(delete_command{"/a/src", t0}).code, errc::ok);
  ASSERT_TRUE(h.sm.log_of("/a/src"));  // soft-deleted: the lost fork's reference holds it
  h.sweep->run(t0 + 5000);
  h.drain();
  EXPECT_FALSE(h.sm.log_of("/a/src"));
  EXPECT_EQ(h.sm.size(), 0u);
}

TEST(fork_sweep, a_fork_created_before_the_tombstone_applies_keeps_its_reference) {
  harness h;
  const fork_spec f = h.retain(2, "/b/late");
  h.before_apply = [&] { h.create("/b/late", f); };  // commits between the read and the tombstone
  h.sweep->run(t0 + 5000);
  h.drain();
  EXPECT_EQ(h.proposed, (std::vector<std::string>{"12 /b/late"}));  // no release
  EXPECT_EQ(h.sweep->stats().kept, 1u);
  EXPECT_TRUE(h.sm.holds_reference("/a/src", fork_origin{0, 2}));
  EXPECT_EQ(h.sm.tombstones(), 0u);
}

TEST(fork_sweep, young_references_and_groups_led_elsewhere_are_left_alone) {
  harness h(1000);
  (void)h.retain(2, "/b/young", t0);
  h.sweep->run(t0 + 999);
  h.drain();
  EXPECT_TRUE(h.proposed.empty());
  h.leader = false;
  h.sweep->run(t0 + 5000);
  h.drain();
  EXPECT_TRUE(h.proposed.empty());
  h.leader = true;
  h.sweep->run(t0 + 5000);
  h.drain();
  EXPECT_EQ(h.proposed.size(), 2u);
}

TEST(fork_sweep, failed_proposals_are_sent_again_by_the_next_pass) {
  harness h;
  (void)h.retain(2, "/b/lost");
  h.fail_proposals = true;
  h.sweep->run(t0 + 5000);
  h.drain();
  EXPECT_FALSE(h.sweep->running());
  EXPECT_TRUE(h.sm.holds_reference("/a/src", fork_origin{0, 2}));
  h.fail_proposals = false;
  h.sweep->run(t0 + 6000);
  h.drain();
  EXPECT_FALSE(h.sm.holds_reference("/a/src", fork_origin{0, 2}));
}

TEST(fork_sweep, answers_after_the_sweep_is_gone_do_nothing) {
  harness h;
  (void)h.retain(2, "/b/lost");
  h.sweep->run(t0 + 5000);
  h.sweep.reset();
  h.drain();  // the read index's answer finds no sweep
  EXPECT_TRUE(h.proposed.empty());
}

}  // namespace
}  // namespace weir::streams

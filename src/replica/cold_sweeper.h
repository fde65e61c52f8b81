// cold_sweeper: deletes one group's cold objects that nothing names any more (docs/cold-tier.md,
// "Orphans"): the objects of deleted and expired streams once no stream or fork reads them, and the
// orphans of lost answers, refused records and earlier runs. tier::orphan_sweep decides, exactly, which
// listed keys may go; this is its caller on one shard.
//
// Every `interval` it lists the group's prefix (e<epoch>/g<group>/) one page at a time through `list`,
// hands each page to the orphan sweep with this node's view (its upload term; the sequence below which
// every index record of the term has been applied or can never be; the partition's index; the retained
// restore snapshots), and deletes what it returns through `remove`,
// at most max_removes_in_flight at a time, before it lists the next page. A key is deleted only after it
// met the rules in two sweeps at least `grace` apart. A failed listing ends the sweep (the next one
// starts over); a failed delete is counted and logged, and the key waits for a later sweep.
//
// The term is settled (no index record of an earlier term can be applied any more) at once on a single
// node, which applies a record when it is submitted; a cluster group's leader first confirms it leads
// and has applied everything committed (settle_term: a raft read index), once per term.
//
// While the partition's log has failed (a command applied in memory may never become durable, and a
// restart would bring back the index that names its objects) nothing is swept.
//
// Owned by the cold_mover, one per group this node leads; lives on the partition's executor: every method
// runs there, and the list and remove functions deliver their answers there. One sweep at a time; stop() ends
// it (answers still in flight then find the sweeper gone and do nothing).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "raft/executor.h"
#include "tier/object_store.h"
#include "tier/orphan_sweep.h"
#include "tier/uploader.h"

namespace weir::replica {

class partition;

struct cold_sweeper_options {
  using list_done = std::function<void(tier::store_result<tier::list_page>)>;
  using list_fn =
      std::function<void(std::string prefix, std::string continuation, int max_keys, list_done done)>;
  using remove_done = std::function<void(tier::store_result<tier::store_done>)>;
  using remove_fn = std::function<void(std::string key, remove_done done)>;

  // The store's calls, answered on the partition's executor (object_store_workers posts them to the
  // shard's loop). Without both, nothing is swept.
  list_fn list;
  remove_fn remove;
  // A retained restore snapshot names the key: it is kept. Default: no snapshot names anything.
  std::function<bool(std::string_view key)> in_snapshot;
  // How long a key stays a candidate before it is deleted (cold-gc-grace-ms), and how often a sweep
  // runs (the node: grace / 2, at least 1 s).
  std::chrono::milliseconds grace{600'000};
  std::chrono::milliseconds interval{300'000};
  // A cluster group's leader: `ready(true)` once it applied every entry committed before the call (so no
  // index record of an earlier term can be applied after), `ready(false)` when it could not confirm it
  // (no longer leads: the sweep ends). Null: settled at once (a single node).
  std::function<void(std::function<void(bool)> ready)> settle_term;
  int page_keys = tier::object_store::max_list_keys;
  std::size_t max_removes_in_flight = 4;
};

struct cold_sweeper_stats {
  std::uint64_t sweeps = 0;           // sweeps that listed the whole prefix
  std::uint64_t objects_deleted = 0;  // objects deleted from the bucket
  std::uint64_t bytes_deleted = 0;    // their sizes (as listed)
  std::uint64_t delete_failures = 0;  // deletes the store refused or did not answer (tried again later)
  std::uint64_t list_failures = 0;    // listings that failed (the sweep starts over later)
  std::uint64_t candidates = 0;       // keys waiting for their grace period (at the last page)
};

class cold_sweeper {
 public:
  // `upload`: the group's uploader's options (epoch, group, term); `settled_seq`: the sequence below
  // which every object of the term was recorded and applied here, or can never be (called at each page).
  cold_sweeper(partition& p, const tier::uploader_options& upload,
               std::function<tier::upload_seq()> settled_seq, cold_sweeper_options o);
  ~cold_sweeper();
  cold_sweeper(const cold_sweeper&) = delete;
  cold_sweeper& operator=(const cold_sweeper&) = delete;

  // Sweeps every interval from now on.
  void start();
  // No more listings or deletes; answers in flight do nothing.
  void stop();
  // Begins a sweep now unless one is under way (tests; the timer runs them otherwise).
  void sweep();

  bool sweeping() const { return sweeping_; }
  const cold_sweeper_stats& stats() const { return stats_; }

 private:
  struct doomed {
    std::string key;
    std::uint64_t size = 0;
  };
  void arm();
  void list_page(std::string continuation);
  void begin();
  void on_page(tier::store_result<tier::list_page> r);
  // Sends deletes while fewer than max_removes_in_flight are out; once the page's are all answered,
  // lists the next page (or ends the sweep).
  void pump();
  void on_removed(const doomed& d, tier::store_result<tier::store_done> r);
  void finish(bool complete);
  tier::sweep_state state() const;

  partition& part_;
  tier::cold_epoch epoch_;
  tier::cold_group group_;
  tier::leader_term term_;
  std::function<tier::upload_seq()> settled_seq_;
  bool term_settled_ = false;
  cold_sweeper_options o_;
  tier::orphan_sweep sweep_;
  raft::executor::timer_id timer_ = 0;
  bool stopped_ = false;
  bool sweeping_ = false;
  std::deque<doomed> doomed_;  // this page's keys to delete, not yet sent
  std::size_t removing_ = 0;   // deletes sent, not yet answered
  std::string next_token_;     // the page after this one ("" with more_ false)
  bool more_ = false;
  cold_sweeper_stats stats_;
  // Answers of calls sent before stop() or destruction find this false and do nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica

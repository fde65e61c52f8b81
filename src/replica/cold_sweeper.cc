#include "replica/cold_sweeper.h"

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "replica/partition.h"
#include "tier/object_key.h"

namespace weir::replica {

cold_sweeper::cold_sweeper(partition& p, const tier::uploader_options& upload,
                           std::function<tier::upload_seq()> settled_seq, cold_sweeper_options o)
    : part_(p),
      epoch_(upload.epoch),
      group_(upload.group),
      term_(upload.term),
      settled_seq_(std::move(settled_seq)),
      term_settled_(!o.settle_term),
      o_(std::move(o)) {
  if (!o_.in_snapshot) o_.in_snapshot = [](std::string_view) { return false; };
  o_.max_removes_in_flight = std::max<std::size_t>(1, o_.max_removes_in_flight);
  o_.page_keys = std::clamp(o_.page_keys, 1, tier::object_store::max_list_keys);
}

cold_sweeper::~cold_sweeper() {
  stop();
}

void cold_sweeper::start() {
  arm();
}

void cold_sweeper::stop() {
  if (stopped_) return;
  stopped_ = true;
  *alive_ = false;
  if (timer_ != 0) part_.executor().cancel_timer(timer_);
  timer_ = 0;
  doomed_.clear();
}

void cold_sweeper::arm() {
  if (stopped_) return;
  timer_ = part_.executor().add_timer(o_.interval, [this] {
    timer_ = 0;
    sweep();
    arm();
  });
}

void cold_sweeper::sweep() {
  if (stopped_ || sweeping_ || !o_.list || !o_.remove) return;
  // A failed log may lose commands already applied here (a delete that dropped extents): nothing is
  // judged against that state until the rebuild has read the log back.
  if (part_.write_failure()) return;
  sweeping_ = true;
  if (term_settled_) return begin();
  std::weak_ptr<bool> alive = alive_;
  o_.settle_term([this, alive](bool settled) {
    if (auto a = alive.lock(); !a || !*a) return;
    if (!settled) return finish(false);
    term_settled_ = true;
    begin();
  });
}

void cold_sweeper::begin() {
  sweep_.begin_pass();
  list_page("");
}

void cold_sweeper::list_page(std::string continuation) {
  std::weak_ptr<bool> alive = alive_;
  o_.list(tier::group_key_prefix(epoch_, group_), std::move(continuation), o_.page_keys,
          [this, alive](tier::store_result<tier::list_page> r) {
            if (auto a = alive.lock(); !a || !*a) return;
            on_page(std::move(r));
          });
}

tier::sweep_state cold_sweeper::state() const {
  tier::sweep_state s;
  s.epoch = epoch_;
  s.group = group_;
  s.term = term_;
  // A single node applies an index record when it submits it (partition::submit_index_record): no
  // record of an earlier term (an earlier run) can be applied any more. A cluster leader waited for its
  // read index once in its term (settle_term).
  s.term_settled = term_settled_;
  s.settled_seq = settled_seq_();
  const tier::cold_index& index = part_.cold_index();
  s.indexed = [&index](std::string_view key) { return index.names(key); };
  s.in_snapshot = o_.in_snapshot;
  s.now_ms = part_.now_ms();
  s.grace_ms = o_.grace.count();
  return s;
}

void cold_sweeper::on_page(tier::store_result<tier::list_page> r) {
  if (!r) {
    ++stats_.list_failures;
    log::warn(
        "weir serve: cold tier: group {}: listing the bucket for objects to delete failed ({}); the "
        "next sweep starts over",
        group_.value(), r.err().describe());
    finish(false);
    return;
  }
  if (part_.write_failure()) {
    finish(false);
    return;
  }
  const tier::list_page& page = *r;
  const std::vector<std::string> keys = sweep_.consider(page, state());
  stats_.candidates = sweep_.candidates();
  // consider() returns keys in the page's order: one walk finds each one's size.
  auto it = page.objects.begin();
  for (const std::string& key : keys) {
    while (it != page.objects.end() && it->key != key) ++it;
    doomed_.push_back(doomed{key, it == page.objects.end() ? 0 : it->size});
  }
  more_ = page.truncated && !page.next_token.empty();
  next_token_ = page.next_token;
  pump();
}

void cold_sweeper::pump() {
  if (stopped_) return;
  while (!doomed_.empty() && removing_ < o_.max_removes_in_flight) {
    doomed d = std::move(doomed_.front());
    doomed_.pop_front();
    ++removing_;
    std::weak_ptr<bool> alive = alive_;
    std::string key = d.key;
    o_.remove(std::move(key), [this, alive, d = std::move(d)](tier::store_result<tier::store_done> r) {
      if (auto a = alive.lock(); !a || !*a) return;
      on_removed(d, std::move(r));
    });
  }
  if (!doomed_.empty() || removing_ > 0) return;
  if (more_) {
    more_ = false;
    list_page(std::move(next_token_));
    return;
  }
  sweep_.end_pass();
  stats_.candidates = sweep_.candidates();
  finish(true);
}

void cold_sweeper::on_removed(const doomed& d, tier::store_result<tier::store_done> r) {
  --removing_;
  if (r) {
    ++stats_.objects_deleted;
    stats_.bytes_deleted += d.size;
  } else {
    // The key is no candidate any more: the next sweep that lists it, still unnamed, starts its grace
    // period again and deletes it then. store_error never carries a credential.
    ++stats_.delete_failures;
    log::warn("weir serve: cold tier: group {}: deleting {} failed ({}); a later sweep tries again",
              group_.value(), d.key, r.err().describe());
  }
  pump();
}

void cold_sweeper::finish(bool complete) {
  sweeping_ = false;
  doomed_.clear();
  more_ = false;
  next_token_.clear();
  if (complete) ++stats_.sweeps;
}

}  // namespace weir::replica

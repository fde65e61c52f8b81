#include "subscriptions/subscription_state.h"

#include <algorithm>
#include <cmath>

#include "base/assert.h"

namespace weir::subscriptions {
namespace {
bool empty_stream_offset(std::string_view o) {
  return !o.empty() && std::all_of(o.begin(), o.end(), [](char c) { return c == '0' || c == '_'; });
}

const std::string& later(const std::string& a, const std::string& b) {
  return offset_after(b, a) ? b : a;
}
}  // namespace

bool offset_after(std::string_view tail, std::string_view acked) {
  if (tail == k_start_offset) return false;
  if (acked == k_start_offset) return !empty_stream_offset(tail);
  return tail > acked;
}

subscription_state::subscription_state(std::string id, subscription_config cfg,
                                       std::int64_t created_at_wall_ms)
    : id_(std::move(id)), cfg_(std::move(cfg)), created_at_wall_ms_(created_at_wall_ms) {}

void subscription_state::restore(std::map<std::string, stream_link> links, std::uint64_t generation,
                                 bool failed, int failed_attempts, std::int64_t retry_at_ms, bool paused) {
  links_ = std::move(links);
  for (auto& [_, l] : links_) l.tail_offset.reset();
  generation_ = generation;
  failed_ = failed;
  failed_attempts_ = failed_attempts;
  retry_at_ms_ = retry_at_ms;
  paused_ = paused;
  wake_.reset();
}

void subscription_state::link_at_tail(const std::string& path, bool explicit_link, const std::string& tail) {
  auto [it, inserted] = links_.try_emplace(path);
  stream_link& l = it->second;
  if (inserted) {
    l.acked_offset = tail;
    l.tail_offset = tail;
  } else if (!l.tail_offset || offset_after(tail, *l.tail_offset)) {
    l.tail_offset = tail;
  }
  bool& flag = explicit_link ? l.explicit_link : l.glob_link;
  if (inserted || !flag) changed_links_.insert(path);
  flag = true;
}

void subscription_state::link_at_start(const std::string& path, bool explicit_link,
                                       std::optional<std::string> tail) {
  auto [it, inserted] = links_.try_emplace(path);
  stream_link& l = it->second;
  if (inserted) {
    l.acked_offset = std::string(k_start_offset);
    l.tail_offset = std::move(tail);
  } else if (tail && (!l.tail_offset || offset_after(*tail, *l.tail_offset))) {
    l.tail_offset = std::move(tail);
  }
  bool& flag = explicit_link ? l.explicit_link : l.glob_link;
  if (inserted || !flag) changed_links_.insert(path);
  flag = true;
}

void subscription_state::unlink_explicit(const std::string& path) {
  auto it = links_.find(path);
  if (it == links_.end() || !it->second.explicit_link) return;
  changed_links_.insert(path);
  it->second.explicit_link = false;
  if (!it->second.glob_link) links_.erase(it);
}

void subscription_state::on_tail(const std::string& path, const std::string& tail) {
  auto it = links_.find(path);
  if (it == links_.end()) return;
  auto& l = it->second;
  if (!l.tail_offset || offset_after(tail, *l.tail_offset)) l.tail_offset = tail;
}

void subscription_state::on_created(const std::string& path, const std::string& tail) {
  auto it = links_.find(path);
  if (it == links_.end()) return;
  if (it->second.acked_offset != k_start_offset) changed_links_.insert(path);
  it->second.acked_offset = std::string(k_start_offset);
  it->second.tail_offset = tail;
}

void subscription_state::on_deleted(const std::string& path) {
  auto it = links_.find(path);
  if (it == links_.end()) return;
  changed_links_.insert(path);
  if (!it->second.explicit_link) {
    links_.erase(it);  // a glob link exists only while a stream matches
    return;
  }
  it->second.glob_link = false;
  it->second.acked_offset = std::string(k_start_offset);
  it->second.tail_offset.reset();
}

bool subscription_state::has_pending() const {
  return std::any_of(links_.begin(), links_.end(), [](const auto& kv) { return kv.second.has_pending(); });
}

std::vector<wake_stream_entry> subscription_state::snapshot() const {
  std::vector<wake_stream_entry> out;
  for (const auto& [path, l] : links_) {
    if (!l.tail_offset) continue;  // the stream does not exist (yet): nothing to read
    out.push_back(
        wake_stream_entry{path, std::string(l.link_type()), l.acked_offset, *l.tail_offset, l.has_pending()});
  }
  return out;
}

const wake_state* subscription_state::try_start_wake(std::int64_t now_ms, std::string wake_id) {
  if (wake_ || retry_at_ms_ != 0 || paused_ || !has_pending()) return nullptr;
  wake_state w;
  w.wake_id = std::move(wake_id);
  w.generation = ++generation_;
  counters_changed_ = true;
  w.snapshot = snapshot();
  // PROTOCOL.md 7.3: for webhook delivery the lease starts when the wake is issued; for pull-wake it
  // starts at claim.
  if (cfg_.type == delivery_type::webhook) w.lease_deadline_ms = now_ms + cfg_.lease_ttl_ms;
  wake_ = std::move(w);
  return &*wake_;
}

const wake_state* subscription_state::claim(const std::string& worker, std::int64_t now_ms,
                                            std::string new_wake_id, bool& busy) {
  busy = false;
  if (wake_ && wake_->holder) {
    if (now_ms < wake_->lease_deadline_ms) {
      busy = true;
      return nullptr;
    }
    wake_.reset();  // the lease ran out and its timer has not fired yet
  }
  if (!wake_) {
    wake_state w;
    w.wake_id = std::move(new_wake_id);
    w.generation = ++generation_;
    counters_changed_ = true;
    wake_ = std::move(w);
  }
  wake_->snapshot = snapshot();
  wake_->holder = worker;
  wake_->lease_deadline_ms = now_ms + cfg_.lease_ttl_ms;
  if (retry_at_ms_ != 0) counters_changed_ = true;
  retry_at_ms_ = 0;  // a worker is here: no need to keep re-announcing
  return &*wake_;
}

fence_result subscription_state::check_fence(std::uint64_t generation, std::string_view wake_id) const {
  if (!wake_ || wake_->generation != generation || wake_->wake_id != wake_id) return fence_result::fenced;
  if (cfg_.type == delivery_type::pull_wake && !wake_->holder) return fence_result::not_claimed;
  return fence_result::ok;
}

bool subscription_state::apply_acks(const std::vector<stream_ack>& acks) {
  for (const auto& a : acks) {
    if (!links_.count(a.stream)) return false;
  }
  for (const auto& a : acks) {
    auto& l = links_.at(a.stream);
    std::string next = later(l.acked_offset, a.offset);  // cursors never move backwards
    if (next != l.acked_offset) changed_links_.insert(a.stream);
    l.acked_offset = std::move(next);
  }
  return true;
}

bool subscription_state::finish_or_extend(bool done, std::int64_t now_ms) {
  WEIR_ASSERT(wake_.has_value(), "finish_or_extend without a wake on '{}'", id_);
  if (!done) {
    wake_->lease_deadline_ms = now_ms + cfg_.lease_ttl_ms;
    return false;
  }
  wake_.reset();
  return has_pending();
}

void subscription_state::release() {
  wake_.reset();
}

bool subscription_state::on_delivered(std::uint64_t generation, bool done) {
  if (!wake_ || wake_->generation != generation) return false;
  if (failed_ || failed_attempts_ != 0) counters_changed_ = true;
  failed_ = false;
  failed_attempts_ = 0;
  if (done) {
    for (const auto& s : wake_->snapshot) {
      auto it = links_.find(s.path);
      if (it == links_.end()) continue;
      std::string next = later(it->second.acked_offset, s.tail_offset);
      if (next != it->second.acked_offset) changed_links_.insert(s.path);
      it->second.acked_offset = std::move(next);
    }
    wake_.reset();
  }
  return true;
}

std::optional<std::int64_t> subscription_state::on_delivery_failed(std::uint64_t generation,
                                                                   std::int64_t now_ms, double jitter,
                                                                   int max_attempts) {
  if (!wake_ || wake_->generation != generation) return std::nullopt;
  wake_.reset();
  counters_changed_ = true;
  failed_ = true;
  ++failed_attempts_;
  if (max_attempts > 0 && failed_attempts_ >= max_attempts) {
    paused_ = true;
    retry_at_ms_ = 0;
    return std::nullopt;
  }
  double base = 1000.0 * std::pow(2.0, std::min(failed_attempts_ - 1, 6));
  base = std::min(base, 60'000.0);
  jitter = std::clamp(jitter, -0.2, 0.2);
  auto delay = static_cast<std::int64_t>(base * (1.0 + jitter));
  retry_at_ms_ = now_ms + delay;
  return delay;
}

void subscription_state::resume() {
  counters_changed_ = true;
  paused_ = false;
  failed_attempts_ = 0;
  retry_at_ms_ = 0;
}

bool subscription_state::expire_lease(std::uint64_t generation, std::int64_t now_ms) {
  if (!wake_ || wake_->generation != generation || wake_->lease_deadline_ms == 0) return false;
  if (now_ms < wake_->lease_deadline_ms) return false;
  wake_.reset();
  return true;
}

}  // namespace weir::subscriptions

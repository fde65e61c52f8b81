#include "replica/cold_mover.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "base/log.h"
#include "tier/cold_index.h"

namespace weir::replica {

result<std::uint64_t> next_cold_term(storage::env& e, const std::string& dir) {
  const std::string path = storage::join_path(dir, "cold-term");
  std::uint64_t last = 0;
  if (e.file_exists(path)) {
    auto text = storage::read_whole_file(e, path);
    if (!text) return text.err();
    const char* b = reinterpret_cast<const char*>(text->data());
    const char* end = b + text->size();
    auto [p, ec] = std::from_chars(b, end, last);
    if (ec != std::errc() || (p != end && *p != '\n')) {
      return make_error(storage::errc::corruption, path + ": not a term");
    }
  }
  const std::uint64_t term = last + 1;
  const std::string text = std::to_string(term) + "\n";
  if (auto st = storage::replace_file(e, path, std::as_bytes(std::span(text.data(), text.size()))); !st) {
    return st.err();
  }
  return term;
}

class cold_mover::local_groups final : public cold_groups {
 public:
  local_groups(partition& p, std::uint32_t group, std::uint64_t term)
      : part_(p), group_(group), term_(term) {}
  std::vector<std::uint32_t> groups() const override { return {group_}; }
  std::uint32_t group_of(std::string_view) const override { return group_; }
  std::optional<std::uint64_t> leader_term(std::uint32_t) const override { return term_; }
  void record(std::uint32_t, std::vector<std::byte> record, recorded done) override {
    done(part_.submit_index_record(std::move(record), [](durable_result&) {}));
  }
  void settle(std::uint32_t, std::function<void(bool)> ready) override { ready(true); }

 private:
  partition& part_;
  std::uint32_t group_;
  std::uint64_t term_;
};

cold_mover::cold_mover(partition& p, cold_mover_options o, tier::uploader::put_fn put)
    : part_(p), o_(std::move(o)), put_(std::move(put)) {
  if (o_.groups == nullptr) {
    own_groups_ = std::make_unique<local_groups>(p, o_.upload.group.value(), o_.upload.term.value());
    o_.groups = own_groups_.get();
  }
}

cold_mover::~cold_mover() {
  *alive_ = false;
  stop();
}

void cold_mover::start() {
  count_all();
  follow_leadership();
  arm();
}

void cold_mover::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (timer_ != 0) part_.executor().cancel_timer(timer_);
  timer_ = 0;
  while (!led_.empty()) step_down(led_.begin()->first);
}

void cold_mover::follow_leadership() {
  std::vector<std::uint32_t> lost;
  for (const auto& [group, g] : led_) {
    if (o_.groups->leader_term(group) != g.term) lost.push_back(group);
  }
  for (std::uint32_t group : lost) step_down(group);
  for (std::uint32_t group : o_.groups->groups()) {
    if (led_.contains(group)) continue;
    if (auto term = o_.groups->leader_term(group)) lead(group, *term);
  }
}

void cold_mover::lead(std::uint32_t group, std::uint64_t term) {
  led_group& g = led_[group];
  g.term = term;
  tier::uploader_options uo = o_.upload;
  uo.group = tier::cold_group(group);
  uo.term = tier::leader_term(term);
  uo.first_seq = tier::upload_seq(0);
  g.uploader = std::make_unique<tier::uploader>(
      part_.executor(), uo, put_, [this, group](const tier::uploaded_object& u) { on_uploaded(group, u); });
  if (o_.sweep.list && o_.sweep.remove) {
    cold_sweeper_options so = o_.sweep;
    so.settle_term = [groups = o_.groups, group](std::function<void(bool)> ready) {
      groups->settle(group, std::move(ready));
    };
    g.sweeper = std::make_unique<cold_sweeper>(
        part_, uo, [this, &g] { return settled_seq(g); }, std::move(so));
    g.sweeper->start();
  }
  // Every stream of the group is read from its cold end (what an earlier run or leader left).
  for (const streams::stream_meta& m : part_.machine().list("", part_.now_ms())) {
    if (o_.groups->group_of(m.path) != group) continue;
    if (auto it = streams_.find(m.path); it != streams_.end()) it->second.generation = 0;
    mark_dirty(m.path);
  }
}

void cold_mover::step_down(std::uint32_t group) {
  auto it = led_.find(group);
  if (it == led_.end()) return;
  if (it->second.sweeper) it->second.sweeper->stop();  // before the uploader: its settled sequence goes
  it->second.uploader->stop();                         // objects in flight are orphans for a sweep
  stats_.stepped_down_failures += it->second.uploader->attempts_failed();
  led_.erase(it);
  for (auto& [path, s] : streams_) {
    if (s.group == group) s.generation = 0;  // from its cold end, should this node lead again
  }
}

tier::upload_seq cold_mover::settled_seq(const led_group& g) const {
  const tier::upload_seq reported = g.uploader->first_unreported();
  if (g.unsettled.empty() || *g.unsettled.begin() >= reported.value()) return reported;
  return tier::upload_seq(*g.unsettled.begin());
}

cold_mover::upload_view cold_mover::uploads() const {
  upload_view v;
  v.attempts_failed = stats_.stepped_down_failures;  // a counter: never down when a group is let go
  for (const auto& [group, g] : led_) {
    v.bytes_waiting += g.uploader->bytes_waiting();
    v.objects_in_flight += g.uploader->objects_in_flight();
    v.attempts_failed += g.uploader->attempts_failed();
    if (!g.uploader->last_error().empty()) v.last_error = g.uploader->last_error();
    ++v.groups_led;
  }
  return v;
}

const tier::uploader* cold_mover::uploader_of(std::uint32_t group) const {
  auto it = led_.find(group);
  return it == led_.end() ? nullptr : it->second.uploader.get();
}

cold_sweeper* cold_mover::sweeper(std::uint32_t group) {
  auto it = led_.find(group);
  return it == led_.end() ? nullptr : it->second.sweeper.get();
}

cold_sweeper_stats cold_mover::sweep_stats() const {
  cold_sweeper_stats sum;
  for (const auto& [group, g] : led_) {
    if (!g.sweeper) continue;
    const cold_sweeper_stats& s = g.sweeper->stats();
    sum.sweeps += s.sweeps;
    sum.objects_deleted += s.objects_deleted;
    sum.bytes_deleted += s.bytes_deleted;
    sum.delete_failures += s.delete_failures;
    sum.list_failures += s.list_failures;
    sum.candidates += s.candidates;
  }
  return sum;
}

void cold_mover::flush() {
  for (auto& [group, g] : led_) g.uploader->flush();
}

void cold_mover::arm() {
  if (stopped_) return;
  timer_ = part_.executor().add_timer(o_.scan_interval, [this] {
    timer_ = 0;
    pass();
    arm();
  });
}

void cold_mover::pass() {
  if (stopped_) return;
  follow_leadership();
  feed_turn();
  count_expired();
  if (o_.keep_bytes > 0 && stats_.held_bytes > o_.keep_bytes) reclaim();
  checkpoint_if_due();
}

void cold_mover::checkpoint_if_due() {
  if (!checkpoint_owed_) return;
  const std::int64_t now = part_.now_ms();
  if (checkpoint_asked_ms_ && now - *checkpoint_asked_ms_ < o_.checkpoint_interval.count()) return;
  checkpoint_owed_ = false;
  checkpoint_asked_ms_ = now;
  part_.request_checkpoint();
}

void cold_mover::reclaim() {
  // Disk is freed a segment at a time, and a segment holds the records of many streams: forget the
  // records of the oldest segment any stream still holds, in every stream that may forget them (up to
  // its cold end), then the next segment, until the held bytes are within the keep share.
  struct candidate {
    std::shared_ptr<const streams::memory_log> log;
    std::string path;
    streams::stream_offset cold_end;
  };
  // The streams counted as holding bytes that are in objects (not every stream: a node with many streams
  // and few writers looks at the few).
  std::vector<candidate> all;
  const streams::state_machine& sm = part_.machine();
  for (const std::string& path : forgettable_) {
    auto log = sm.log_of(path);
    auto end = part_.cold_index().cold_end(path);
    if (log && end) all.push_back(candidate{std::move(log), path, *end});
  }
  std::uint64_t forgotten = 0;
  // (Each record forgotten is counted off held_bytes as it goes: partition::forget_cold tells the mover.)
  while (stats_.held_bytes > o_.keep_bytes) {
    std::optional<std::uint64_t> oldest;
    for (const candidate& c : all) {
      auto seg = c.log->first_segment();
      // A stream whose first held record is not in the bucket yet cannot give anything now.
      auto first = c.log->record_at(c.log->held_from());
      if (!seg || !first || first->end > c.cold_end.value()) continue;
      oldest = oldest ? std::min(*oldest, *seg) : *seg;
    }
    if (!oldest) break;
    std::uint64_t step = 0;
    for (const candidate& c : all) {
      step += part_.forget_cold(c.path, std::min(c.cold_end, c.log->end_through_segment(*oldest)));
    }
    if (step == 0) break;
    forgotten += step;
  }
  if (forgotten == 0) return;
  stats_.forgotten_bytes += forgotten;
  ++stats_.reclaims;
  checkpoint_owed_ = true;  // it deletes the segments no record references any more
}

void cold_mover::mark_dirty(const std::string& path) {
  if (dirty_.insert(path).second) queue_.push_back(path);
}

void cold_mover::note_written(const std::string& path) {
  mark_dirty(path);
  if (appended_since_feed_ >= o_.feed_after_bytes) kick();
}

bool cold_mover::room() const {
  for (const auto& [group, g] : led_) {
    if (g.uploader->bytes_waiting() < o_.max_waiting_bytes) return true;
  }
  return false;
}

void cold_mover::kick() {
  if (kicked_ || stopped_ || queue_.empty() || !room()) return;
  kicked_ = true;
  std::weak_ptr<bool> alive = alive_;
  part_.executor().post([this, alive] {
    if (auto a = alive.lock(); !a || !*a) return;
    kicked_ = false;
    feed_turn();
  });
}

void cold_mover::feed_turn() {
  if (stopped_) return;
  appended_since_feed_ = 0;
  turn_fed_ = 0;
  // A stream that gave bytes goes to the back of the queue, so that streams take turns; one that must
  // wait (a read in flight, an uploader full) is looked at again at the next turn or pass.
  std::vector<std::string> waiting;
  // Every stream is looked at, even with no uploader to take its bytes: a stream this node does not lead
  // is tracked all the same (its bytes count against the budget) and leaves the queue.
  const std::int64_t deadline = o_.clock_us ? o_.clock_us() + o_.turn_time.count() : 0;
  bool out_of_time = false;
  while (!queue_.empty() && turn_fed_ < o_.turn_bytes && !out_of_time) {
    std::string path = std::move(queue_.front());
    queue_.pop_front();
    switch (feed(path)) {
      case fed::none:
        dirty_.erase(path);
        break;
      case fed::more:
        queue_.push_back(std::move(path));
        break;
      case fed::later:
        waiting.push_back(std::move(path));
        break;
    }
    out_of_time = o_.clock_us && o_.clock_us() >= deadline;
  }
  const bool cut_short = !queue_.empty() && (turn_fed_ >= o_.turn_bytes || out_of_time);
  for (std::string& path : waiting) queue_.push_back(std::move(path));
  if (cut_short) kick();
}

cold_mover::fed cold_mover::feed(const std::string& path) {
  const streams::state_machine& sm = part_.machine();
  auto log = sm.log_of(path);
  if (!log) {
    if (auto it = streams_.find(path); it != streams_.end()) untrack(it);
    return fed::none;
  }
  streams::read_result head = part_.head_visible(path);
  if (head.code != streams::errc::ok || !head.meta) return fed::none;  // soft-deleted or expired: stays
  stream_state& s = track(path)->second;
  // Tracked on every node (its bytes count against the budget), fed only where its group is led.
  auto led = led_.find(s.group);
  if (led == led_.end()) return fed::none;
  if (s.reading) return fed::later;
  if (led->second.uploader->bytes_waiting() >= o_.max_waiting_bytes) return fed::later;
  if (s.generation != head.meta->generation) {
    s.generation = head.meta->generation;
    s.fed = part_.cold_index().cold_end(path).value_or(log->base());
  }
  if (s.fed < log->base()) s.fed = log->base();
  // read_planned sees only durable bytes.
  streams::read_result rr = part_.read_planned(path, s.fed, o_.scan_bytes);
  if (rr.code != streams::errc::ok || rr.plan.slices.empty() || rr.plan.next <= s.fed) return fed::none;
  const std::uint64_t generation = s.generation;
  const streams::stream_offset from = s.fed;
  const bool json = head.meta->json;
  bool cold = false;
  for (const auto& slice : rr.plan.slices) cold = cold || slice.cold();
  if (!cold) {
    hand_over(path, generation, from, json, rr.plan);
    // `s` may have moved (the hand-over can report objects, which may touch streams_).
    auto it = streams_.find(path);
    return it != streams_.end() && it->second.fed > from ? fed::more : fed::later;
  }
  s.reading = true;
  std::weak_ptr<bool> alive = alive_;
  part_.read_slices(std::move(rr.plan),
                    [this, alive, path, generation, from, json](streams::read_plan plan, status io) {
                      if (auto a = alive.lock(); !a || !*a || stopped_) return;
                      auto it = streams_.find(path);
                      if (it == streams_.end()) return;
                      it->second.reading = false;
                      if (!io) {
                        ++stats_.read_failures;
                        log::warn("weir serve: cold tier: reading {} for an upload failed ({}); trying again",
                                  path, io.err().reason);
                        return;  // still dirty: the next pass reads it again
                      }
                      hand_over(path, generation, from, json, plan);
                      kick();  // the rest of it, and whatever waited
                    });
  return fed::later;
}

void cold_mover::hand_over(const std::string& path, std::uint64_t generation, streams::stream_offset from,
                           bool json, streams::read_plan& plan) {
  auto it = streams_.find(path);
  if (it == streams_.end() || it->second.generation != generation || it->second.fed != from) return;
  auto led = led_.find(it->second.group);
  if (led == led_.end()) return;  // stepped down while the bytes were read
  // The slices go to the uploader as they are (in memory, or read back into the plan): the object
  // writer copies them once, into the object.
  std::uint64_t total = 0;
  for (const auto& slice : plan.slices) total += slice.view().size();
  if (total != plan.next.value() - from.value()) {
    // A read plan counts the bytes from `from` to `next`; anything else is a bug upstream. Nothing is
    // uploaded for it.
    log::error("weir serve: cold tier: {}: read [{}, {}) gave {} bytes; not uploaded", path, from.value(),
               plan.next.value(), total);
    return;
  }
  auto log = part_.machine().log_of(path);
  if (!log) return;
  if (log->held_from() > from) {
    // While the bytes were read, objects another leader uploaded took the stream's cold end past `from`
    // and this node forgot those records: their bytes are in the bucket already.
    it->second.fed = log->held_from();
    return;
  }
  // The records that begin in these bytes go into the objects' record tables, so that a fork at one of
  // them can still be resolved once no node holds them (docs/cold-tier.md, "Forks").
  std::vector<tier::object_record> records;
  log->for_each_record_in(from, plan.next, [&](const streams::record& r) {
    records.push_back(
        tier::object_record{streams::stream_offset(r.begin()), streams::stream_offset(r.end), r.messages});
  });
  std::span<const tier::object_record> left(records);
  // A JSON stream's records go whole (a JSON read reads whole records: each slice is one), so that every
  // extent ends at a message boundary (docs/cold-tier.md, "JSON streams"). A byte stream's slices go one
  // after the other: the uploader cuts them at objects' ends as it would one range, and the object
  // writer merges a stream's consecutive ranges into one.
  streams::stream_offset at = from;
  for (const auto& slice : plan.slices) {
    const std::string_view v = slice.view();
    const streams::stream_offset end(at.value() + v.size());
    const std::size_t in_slice = tier::records_before(left, end);
    led->second.uploader->add(path, at, end, std::as_bytes(std::span(v.data(), v.size())), json,
                              left.first(in_slice));
    left = left.subspan(in_slice);
    at = end;
  }
  it->second.fed = plan.next;
  turn_fed_ += total;
}

void cold_mover::on_uploaded(std::uint32_t group, const tier::uploaded_object& u) {
  if (stopped_) return;
  kick();  // its uploader has room again
  if (auto it = led_.find(group); it != led_.end()) it->second.unsettled.insert(u.name.seq.value());
  std::weak_ptr<bool> alive = alive_;
  o_.groups->record(group, tier::encode_index_record(u),
                    [this, alive, group, u](const result<tier::cold_apply_result>& applied) {
                      if (auto a = alive.lock(); !a || !*a || stopped_) return;
                      // Applied, or never proposed (no leader here): settled. A record whose outcome is
                      // unknown may still commit in this term: it holds the sweep back for the term.
                      const bool unknown =
                          !applied && applied.err().is<errc>() &&
                          applied.err().code == static_cast<int>(errc::cluster_outcome_unknown);
                      if (auto it = led_.find(group);
                          it != led_.end() && it->second.term == u.name.term.value() && !unknown) {
                        it->second.unsettled.erase(u.name.seq.value());
                      }
                      on_recorded(u, applied);
                    });
}

void cold_mover::on_recorded(const tier::uploaded_object& u, const result<tier::cold_apply_result>& applied) {
  if (!applied) {
    // Not applied here (a leadership lost, a log that failed): the object is an orphan unless the record
    // commits after all; its streams go again from their cold ends.
    log::warn("weir serve: cold tier: the index record of {} was not applied here: {}", u.key,
              applied.err().reason);
    for (const auto& r : u.ranges) set_back(r.stream);
    return;
  }
  if (applied->recorded) {
    ++stats_.objects;
    // (The partition counted the streams again as it applied the record: the budget is free at once.)
    for (const auto& r : u.ranges) stats_.bytes += r.end.value() - r.first.value();
  }
  if (applied->refused == 0) return;
  stats_.ranges_refused += applied->refused;
  // Set the streams of refused ranges back to their cold end: their bytes go again in a later object.
  for (const auto& r : u.ranges) {
    auto end = part_.cold_index().cold_end(r.stream);
    if (end && *end >= r.end) continue;
    set_back(r.stream);
  }
}

void cold_mover::set_back(const std::string& path) {
  auto it = streams_.find(path);
  if (it == streams_.end()) return;
  it->second.generation = 0;  // re-read from the cold end at the next pass
  mark_dirty(path);
}

std::unordered_map<std::string, cold_mover::stream_state>::iterator cold_mover::track(
    const std::string& path) {
  auto [it, fresh] = streams_.try_emplace(path);
  if (fresh) it->second.group = o_.groups->group_of(path);
  return it;
}

void cold_mover::untrack(std::unordered_map<std::string, stream_state>::iterator it) {
  stats_.local_bytes -= it->second.local;
  stats_.held_bytes -= it->second.held;
  forgettable_.erase(it->first);
  streams_.erase(it);
}

void cold_mover::count(const std::string& path) {
  const streams::state_machine& sm = part_.machine();
  auto log = sm.log_of(path);
  if (!log) {
    if (auto it = streams_.find(path); it != streams_.end()) untrack(it);
    return;
  }
  stream_state& s = track(path)->second;
  const std::uint64_t tail = log->tail().value();
  const std::optional<streams::stream_offset> cold_end = part_.cold_index().cold_end(path);
  const std::uint64_t first = cold_end.value_or(log->base()).value();
  // A stream that is soft-deleted (kept for its forks) or expired is not uploaded: its bytes do not
  // count against the budget of bytes waiting for the bucket.
  const streams::state_machine::position at = sm.position_of(path, part_.now_ms());
  s.visible = at.exists;
  if (at.exists && at.expires_ms != 0 && (s.expiring_at == 0 || at.expires_ms < s.expiring_at)) {
    s.expiring_at = at.expires_ms;
    expiring_.emplace(at.expires_ms, path);
  }
  const std::uint64_t local = s.visible && tail > first ? tail - first : 0;
  const std::uint64_t held = tail - log->held_from().value();
  if (s.visible && cold_end && log->held_from() < *cold_end)
    forgettable_.insert(path);
  else
    forgettable_.erase(path);
  stats_.local_bytes += local - s.local;  // unsigned: wraps back into range
  stats_.held_bytes += held - s.held;
  s.local = local;
  s.held = held;
  s.tail = tail;
}

void cold_mover::note_applied(const streams::command& c, const streams::outcome& o) {
  for (const std::string& path : o.removed) count(path);
  const streams::payload* data = streams::command_data(c);
  if (data) appended_since_feed_ += data->size();
  if (data && o.meta) {
    // An append to a stream counted visible: only its tail moved (no look-up of its log or index).
    auto it = streams_.find(o.meta->path);
    if (it != streams_.end() && it->second.visible && o.meta->tail.value() >= it->second.tail) {
      stream_state& s = it->second;
      const std::uint64_t grew = o.meta->tail.value() - s.tail;
      s.tail += grew;
      s.local += grew;
      s.held += grew;
      stats_.local_bytes += grew;
      stats_.held_bytes += grew;
      return;
    }
  }
  count(streams::command_path(c));
}

void cold_mover::count_all() {
  for (auto it = streams_.begin(); it != streams_.end();) {
    auto next = std::next(it);
    count(it->first);  // may untrack `it` (only it)
    it = next;
  }
  for (const streams::stream_meta& m : part_.machine().list("", part_.now_ms())) {
    if (!streams_.contains(m.path)) count(m.path);  // the tracked ones were counted above
  }
}

void cold_mover::count_expired() {
  const std::int64_t now = part_.now_ms();
  while (!expiring_.empty() && expiring_.begin()->first <= now) {
    auto node = expiring_.extract(expiring_.begin());
    if (auto it = streams_.find(node.mapped()); it != streams_.end() && it->second.expiring_at == node.key())
      it->second.expiring_at = 0;
    count(node.mapped());  // expired; or renewed since: back in at its new time
  }
}

}  // namespace weir::replica

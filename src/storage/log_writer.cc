#include "storage/log_writer.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/log.h"
#include "storage/checkpoint_store.h"
#include "storage/log_format.h"

namespace weir::storage {

result<sync_policy> parse_sync_policy(std::string_view text) {
  if (text == "always") return sync_policy{sync_mode::always, {}};
  if (text == "never") return sync_policy{sync_mode::never, {}};
  constexpr std::string_view prefix = "interval:";
  if (text.starts_with(prefix)) {
    std::string_view num = text.substr(prefix.size());
    unsigned ms = 0;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), ms);
    if (ec == std::errc{} && ptr == num.data() + num.size() && ms > 0) {
      return sync_policy{sync_mode::interval, std::chrono::milliseconds(ms)};
    }
  }
  return make_error(errc::invalid_argument,
                    fmt::format("fsync mode '{}': expected always, interval:MS (MS > 0) or never", text));
}

log_writer::log_writer(env& e, std::string dir, log_options opts, executor exec, disk_worker* worker)
    : env_(e), dir_(std::move(dir)), opts_(opts), exec_(std::move(exec)), worker_(worker) {}

result<std::unique_ptr<log_writer>> log_writer::open(env& e, std::string dir, log_options opts,
                                                     const recovered_log& rec, executor exec,
                                                     disk_worker* worker) {
  if (opts.segment_bytes <= format::segment_header_size) {
    return make_error(errc::invalid_argument,
                      fmt::format("segment size {} is too small", opts.segment_bytes));
  }
  std::unique_ptr<log_writer> w(new log_writer(e, std::move(dir), opts, std::move(exec), worker));
  w->next_lsn_ = rec.next_lsn;
  w->segments_.assign(rec.segments.begin(), rec.segments.end());
  if (rec.start_new_segment) {
    // Create the first segment (or a fresh one after the checkpoint) now, synchronously.
    segment_id id = rec.next_segment;
    const std::string path = w->segment_path(id);
    auto file = e.open_writable(path, open_mode::create_new);
    if (!file) return file.err();
    if (auto st = (*file)->append(format::encode_segment_header({id, w->next_lsn_})); !st) return st.err();
    if (auto st = (*file)->sync(); !st) return st.err();
    if (auto st = e.sync_dir(w->dir_); !st) return st.err();
    w->active_ = std::move(*file);
    w->segments_.push_back(
        segment_info{id, w->next_lsn_, lsn{w->next_lsn_.value() - 1}, format::segment_header_size});
  } else {
    WEIR_ASSERT(!w->segments_.empty(), "recovered log without segments must start a new one");
    const segment_info& last = w->segments_.back();
    auto file = e.open_writable(w->segment_path(last.id), open_mode::open_existing);
    if (!file) return file.err();
    if ((*file)->size() != last.size) {
      return make_error(errc::corruption, fmt::format("{}: size {} but recovery ended at {}",
                                                      w->segment_path(last.id), (*file)->size(), last.size));
    }
    w->active_ = std::move(*file);
  }
  w->preallocate_active();
  if (opts.prepare_segments && opts.sync.mode == sync_mode::always) {
    w->spares_ = std::make_unique<segment_spares>(e, w->dir_, opts.prepared_first_bytes, opts.segment_bytes,
                                                  opts.prepared_bytes_per_second);
    w->spares_->request();
  }
  w->last_sync_ = std::chrono::steady_clock::now();
  w->publish_segments();
  if (worker) return w;  // the worker runs the disk work: no threads
  w->thread_ = std::thread([raw = w.get()] { raw->run(); });
  if (opts.sync.mode != sync_mode::always) {
    w->flusher_thread_ = std::thread([raw = w.get()] { raw->flusher_run(); });
  }
  return w;
}

log_writer::~log_writer() {
  if (worker_) {
    *alive_ = false;  // the tasks handed over and not run yet find nothing to do
    {
      std::unique_lock lock(mu_);
      stop_ = true;
      std::size_t answered = 0;
      std::chrono::microseconds last_batch_time{0};
      write_pending(lock, answered, last_batch_time);
    }
    {
      std::unique_lock lock(flusher_.mu);
      if (flusher_.file) sync_requested(lock);
    }
    finish_stop();
    return;
  }
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(flusher_.mu);
    flusher_.stop = true;
  }
  flusher_.cv.notify_one();
  if (flusher_thread_.joinable()) flusher_thread_.join();
}

void log_writer::append(std::uint8_t type, std::span<const std::byte> payload, append_callback done,
                        bool lone) {
  WEIR_ASSERT(type != 0, "record type 0 is reserved");
  if (payload.size() > format::max_record_payload) {
    exec_([done = std::move(done), n = payload.size()] {
      done(make_error(errc::invalid_argument, fmt::format("record of {} bytes is too large", n)));
    });
    return;
  }
  const std::size_t size = format::record_header_size + payload.size();
  bool wake = false;
  {
    std::unique_lock lock(mu_);
    if (stop_) {
      lock.unlock();  // never call out (the executor may run inline) with the batch lock held
      exec_([done = std::move(done)] { done(make_error(errc::closed, "log is closing")); });
      return;
    }
    if (lone && try_write_inline(lock, type, payload, done)) return;
    std::size_t offset = pending_.bytes.size();
    pending_.bytes.resize(offset + size);
    // The lsn and CRC are filled in on the sync thread, which alone knows the next lsn.
    format::encode_record_unsealed(std::span<std::byte>(pending_.bytes).subspan(offset, size), type, payload);
    pending_.records.push_back(pending_record{offset, size, std::move(done)});
    work_posted_.store(true, std::memory_order_release);
    wake = pending_.records.size() == wake_at_;
    if (worker_) return hand_to_worker();
  }
  if (wake) cv_.notify_one();
}

bool log_writer::try_write_inline(std::unique_lock<std::mutex>& lock, std::uint8_t type,
                                  std::span<const std::byte> payload, append_callback& done) {
  if (worker_ || opts_.inline_after == 0 || opts_.sync.mode != sync_mode::always) return false;
  if (payload.size() > opts_.inline_max_bytes) return false;
  // The sync thread must be idle: nothing queued (the record would overtake it), nothing being written.
  if (busy_ || !pending_.records.empty() || !pending_.checkpoints.empty() || !pending_.syncs.empty()) {
    return false;
  }
  if (lone_batches_.load(std::memory_order_relaxed) < opts_.inline_after) return false;
  // Taken while mu_ is held, so that a record appended after this one (queued for the sync thread) is
  // written after it. try_lock: the sync thread takes write_mu_ without mu_ and may take mu_ under it.
  std::unique_lock wl(write_mu_, std::try_to_lock);
  if (!wl.owns_lock()) return false;
  lock.unlock();
  const std::size_t size = format::record_header_size + payload.size();
  batch b;
  b.bytes = std::move(inline_bytes_);
  b.bytes.resize(size);
  format::encode_record_unsealed(std::span<std::byte>(b.bytes), type, payload);
  b.records.push_back(pending_record{0, size, std::move(done)});
  inline_batches_.fetch_add(1, std::memory_order_relaxed);
  write_batch(b);  // its completions go through the executor, after those of every earlier batch
  if (b.bytes.capacity() <= (1u << 20)) inline_bytes_ = std::move(b.bytes);
  return true;
}

void log_writer::checkpoint(lsn covered, std::vector<std::byte> blob, std::vector<segment_id> keep,
                            checkpoint_callback done) {
  {
    std::unique_lock lock(mu_);
    if (stop_) {
      lock.unlock();
      exec_([done = std::move(done)] { done(make_error(errc::closed, "log is closing")); });
      return;
    }
    pending_.checkpoints.push_back(
        pending_checkpoint{covered, std::move(blob), std::move(keep), std::move(done)});
    work_posted_.store(true, std::memory_order_release);
    if (worker_) return hand_to_worker();
  }
  cv_.notify_one();
}

void log_writer::sync(sync_callback done) {
  {
    std::unique_lock lock(mu_);
    if (stop_) {
      lock.unlock();
      exec_([done = std::move(done)] { done(make_error(errc::closed, "log is closing")); });
      return;
    }
    pending_.syncs.push_back(std::move(done));
    work_posted_.store(true, std::memory_order_release);
    if (worker_) return hand_to_worker();
  }
  cv_.notify_one();
}

void log_writer::resume() {
  std::lock_guard lock(mu_);
  fence_.reset();
}

log_stats log_writer::stats() const {
  log_stats s{records_.load(), batches_.load(), syncs_.load(), failed_batches_.load(),
              failed_periodic_syncs_.load()};
  s.inline_batches = inline_batches_.load();
  s.prepared_segments = prepared_segments_.load();
  s.segments = segments_on_disk_.get();
  s.segment_bytes = segment_bytes_on_disk_.get();
  s.sync_us = sync_us_.read();
  s.batch_records = batch_records_.read();
  s.batch_bytes = batch_bytes_.read();
  return s;
}

bool log_writer::idle() const {
  std::lock_guard lock(mu_);
  return !busy_ && pending_.records.empty() && pending_.checkpoints.empty() && pending_.syncs.empty();
}

void log_writer::publish_segments() {
  std::uint64_t bytes = 0;
  for (const segment_info& s : segments_) bytes += s.size;
  segments_on_disk_.set(segments_.size());
  segment_bytes_on_disk_.set(bytes);
}

namespace {
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::uint64_t micros_since(std::chrono::steady_clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count());
}
}  // namespace

std::string log_writer::segment_path(segment_id id) const {
  return join_path(dir_, format::segment_file_name(id));
}

void log_writer::run() {
  std::unique_lock lock(mu_);
  std::size_t answered = 0;  // appends the last batch completed: writers that may append again
  std::chrono::microseconds last_batch_time{0};
  for (;;) {
    auto has_work = [&] {
      return stop_ || !pending_.records.empty() || !pending_.checkpoints.empty() || !pending_.syncs.empty();
    };
    if (opts_.sync.mode == sync_mode::always && opts_.gather.count() > 0 && answered > 0) {
      // Gather: the writers just answered, plus those already waiting.
      const std::size_t target = answered + pending_.records.size();
      const auto deadline = std::chrono::steady_clock::now() + std::min(opts_.gather, last_batch_time);
      wake_at_ = target;
      cv_.wait_until(lock, deadline, [&] {
        return stop_ || pending_.records.size() >= target || !pending_.checkpoints.empty();
      });
      wake_at_ = 1;
    }
    if (opts_.sync.mode == sync_mode::always && opts_.idle_spin.count() > 0 && answered <= spin_batch_max &&
        !has_work()) {
      // Poll for the next append a little before sleeping: waking a sleeping thread costs tens of
      // microseconds on this VM, a good part of one connection's round trip.
      lock.unlock();
      const auto deadline = std::chrono::steady_clock::now() + opts_.idle_spin;
      while (!work_posted_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline) {
        spin_pause();
      }
      lock.lock();
    }
    if (opts_.sync.mode == sync_mode::interval && dirty_) {
      cv_.wait_until(lock, last_sync_ + opts_.sync.interval, has_work);
    } else {
      cv_.wait(lock, has_work);
    }
    work_posted_.store(false, std::memory_order_relaxed);
    if (stop_ && pending_.records.empty() && pending_.checkpoints.empty() && pending_.syncs.empty()) break;
    write_pending(lock, answered, last_batch_time);
  }
  lock.unlock();
  finish_stop();
}

void log_writer::write_pending(std::unique_lock<std::mutex>& lock, std::size_t& answered,
                               std::chrono::microseconds& last_batch_time) {
  batch b;
  std::swap(b, pending_);
  pending_.bytes = std::move(spare_);
  pending_.bytes.clear();
  busy_ = true;
  lock.unlock();

  answered = b.records.size();
  if (!b.records.empty()) {
    const auto began = std::chrono::steady_clock::now();
    {
      std::lock_guard wl(write_mu_);
      write_batch(b);
    }
    last_batch_time =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - began);
    // With idle_spin, a lone writer's batch: its completion cannot bring the next append (that needs a
    // round trip to the client), so waiting for it to run only costs two thread wake-ups.
    const bool lone = opts_.idle_spin.count() > 0 && b.records.size() == 1;
    if (!worker_ && opts_.sync.mode == sync_mode::always && opts_.linger.count() > 0 && !lone) {
      std::unique_lock tl(tracker_->mu);
      tracker_->cv.wait_for(tl, opts_.linger, [&] { return tracker_->ran >= posted_; });
    }
  }
  {
    std::lock_guard wl(write_mu_);
    if (opts_.sync.mode == sync_mode::interval && dirty_ &&
        std::chrono::steady_clock::now() >= last_sync_ + opts_.sync.interval) {
      request_background_sync();
    }
    handle_syncs(b.syncs);
    for (auto& c : b.checkpoints) do_checkpoint(c);
  }

  lock.lock();
  busy_ = false;
  if (spare_.capacity() < b.bytes.capacity()) spare_ = std::move(b.bytes);
}

void log_writer::hand_to_worker() {
  if (worker_turn_queued_) return;
  worker_turn_queued_ = true;
  worker_->run([this, alive = std::weak_ptr<bool>(alive_)] {
    if (auto a = alive.lock(); !a || !*a) return;
    std::unique_lock lock(mu_);
    worker_turn_queued_ = false;
    std::size_t answered = 0;
    std::chrono::microseconds last_batch_time{0};
    write_pending(lock, answered, last_batch_time);
  });
}

void log_writer::wake_flusher() {
  if (!worker_) {
    flusher_.cv.notify_one();
    return;
  }
  worker_->run([this, alive = std::weak_ptr<bool>(alive_)] {
    if (auto a = alive.lock(); !a || !*a) return;
    std::unique_lock lock(flusher_.mu);
    if (flusher_.file) sync_requested(lock);
  });
}

void log_writer::finish_stop() {
  // A clean stop leaves nothing unsynced, whatever the mode, and no prepared zeros for recovery to cut.
  std::lock_guard wl(write_mu_);
  if (dirty_ && !poisoned_) periodic_sync();
  if (!poisoned_ && active_prepared_ > active_->size()) {
    if (auto st = trim_active(); !st) {
      log::warn("storage: {}: cannot cut the active segment's unused zeros at stop ({}); recovery will", dir_,
                st.err().reason);
    }
  }
}

status log_writer::sync_active() {
  syncs_.fetch_add(1, std::memory_order_relaxed);
  const auto began = std::chrono::steady_clock::now();
  status st = active_->sync();
  sync_us_.observe_shared(micros_since(began));  // the flusher thread observes too
  return st;
}

void log_writer::poison_after_background_failure() {
  if (opts_.sync.mode == sync_mode::always || poisoned_) return;
  std::optional<error> failed;
  {
    std::lock_guard lock(flusher_.mu);
    failed = flusher_.failure;
  }
  if (!failed) return;
  // Records were already acknowledged in this mode; the page cache may have dropped them (and a later
  // fdatasync may succeed without writing them). Stop taking writes rather than build on a log of unknown
  // content.
  log::error("storage: {}: background fdatasync failed ({}); the log is read-only until restart", dir_,
             failed->reason);
  poisoned_ =
      make_error(errc::poisoned, fmt::format("log {} needs a restart after: {}", dir_, failed->reason));
}

void log_writer::write_batch(batch& b) {
  lone_batches_.store(b.records.size() == 1 ? lone_batches_.load(std::memory_order_relaxed) + 1 : 0,
                      std::memory_order_relaxed);
  std::optional<error> fenced;
  {
    std::lock_guard lock(mu_);
    fenced = fence_;
  }
  poison_after_background_failure();
  if (poisoned_ || fenced) {
    exec_([recs = std::move(b.records), err = poisoned_ ? *poisoned_ : *fenced]() mutable {
      for (auto& r : recs) r.done(err);
    });
    return;
  }
  const segment_id start_segment = segments_.back().id;
  const std::uint64_t start_size = active_->size();
  const lsn start_lsn = next_lsn_;
  std::vector<std::shared_ptr<writable_file>> retired;  // segments rolled away from in this batch
  std::vector<append_ack> acks;
  acks.reserve(b.records.size());

  auto fail = [&](const error& cause) {
    error reported = undo(cause, start_segment, start_size, start_lsn, retired);
    failed_batches_.fetch_add(1, std::memory_order_relaxed);
    if (opts_.fence_after_failure) {
      std::lock_guard lock(mu_);
      fence_ = reported;
    }
    exec_([recs = std::move(b.records), reported]() mutable {
      for (auto& r : recs) r.done(reported);
    });
  };

  if (wants_prepared_segment(b.bytes.size())) {
    if (auto st = roll(retired); !st) return fail(st.err());
  }
  std::span<std::byte> buf(b.bytes);
  std::size_t chunk_begin = 0;  // start of the bytes not yet written to the active segment
  for (const auto& r : b.records) {
    std::uint64_t at = active_->size() + (r.offset - chunk_begin);
    if (at > format::segment_header_size && at + r.size > opts_.segment_bytes) {
      if (auto st = active_->append(buf.subspan(chunk_begin, r.offset - chunk_begin)); !st)
        return fail(st.err());
      if (auto st = roll(retired); !st) return fail(st.err());
      chunk_begin = r.offset;
      at = active_->size();
    }
    format::seal_record(buf.subspan(r.offset, r.size), next_lsn_);
    acks.push_back(append_ack{next_lsn_, log_position{segments_.back().id, at}});
    segments_.back().last = next_lsn_;
    next_lsn_ = lsn{next_lsn_.value() + 1};
  }
  if (auto st = active_->append(buf.subspan(chunk_begin)); !st) return fail(st.err());
  if (opts_.sync.mode == sync_mode::always) {
    if (auto st = sync_active(); !st) return fail(st.err());
  } else {
    dirty_ = true;
  }
  segments_.back().size = active_->size();

  records_.fetch_add(b.records.size(), std::memory_order_relaxed);
  batches_.fetch_add(1, std::memory_order_relaxed);
  batch_records_.observe(b.records.size());
  batch_bytes_.observe(b.bytes.size());
  publish_segments();
  ++posted_;
  exec_([recs = std::move(b.records), acks = std::move(acks), tracker = tracker_, n = posted_]() mutable {
    for (std::size_t i = 0; i < recs.size(); ++i) recs[i].done(acks[i]);
    {
      std::lock_guard lock(tracker->mu);
      tracker->ran = n;
    }
    tracker->cv.notify_all();
  });
}

bool log_writer::wait_for_prepared_segment(std::chrono::milliseconds limit) {
  return spares_ && spares_->wait_ready(limit);
}

bool log_writer::wants_prepared_segment(std::size_t bytes) const {
  if (!spares_ || active_->size() <= format::segment_header_size) return false;
  if (active_prepared_ != 0 && active_->size() + bytes <= active_prepared_) return false;
  return spares_->ready();
}

status log_writer::trim_active() {
  if (auto st = active_->truncate(active_->size()); !st) return st;
  active_prepared_ = 0;
  return sync_active();
}

status log_writer::roll(std::vector<std::shared_ptr<writable_file>>& retired) {
  // The old segment must be complete on disk before the new one exists: recovery then only ever finds a
  // torn tail (or prepared zeros) in the last segment.
  if (auto st = sync_active(); !st) return st;
  if (active_prepared_ > active_->size()) {
    if (auto st = trim_active(); !st) return st;
  }
  segments_.back().size = active_->size();
  const segment_id id{segments_.back().id.value() + 1};
  const std::string path = segment_path(id);
  std::optional<segment_spares::spare> spare = spares_ ? spares_->take() : std::nullopt;
  status renamed = spare ? env_.rename_file(spare->path, path) : status{};
  // The next spare, asked for only after the rename (a preparation first removes what is left at the
  // spare's name) and at once, not later (at half use, say): the next spare is twice as large at a fixed
  // pace, and a lone writer then ran past its prepared zeros for a good part of each segment
  // (docs/benchmarks.md, "Redis: prepared segments close the 1-connection gap").
  if (spares_) spares_->request();
  if (!renamed) return renamed;
  auto file = env_.open_writable(path, spare ? open_mode::overwrite : open_mode::create_new);
  if (!file) return file.err();
  status st = (*file)->append(format::encode_segment_header({id, next_lsn_}));
  if (st) st = (*file)->sync();
  if (st) st = env_.sync_dir(dir_);
  if (!st) {
    file->reset();
    (void)env_.remove_file(path);  // best effort; recovery drops a segment with a torn header anyway
    return st;
  }
  retired.push_back(std::move(active_));
  active_ = std::move(*file);
  active_prepared_ = spare ? spare->bytes : 0;
  if (spare) prepared_segments_.fetch_add(1, std::memory_order_relaxed);
  segments_.push_back(segment_info{id, next_lsn_, lsn{next_lsn_.value() - 1}, format::segment_header_size});
  preallocate_active();
  return {};
}

void log_writer::preallocate_active() {
  // In `always` mode the sync thread writes and syncs by itself, so no concurrent sync holds the block-map
  // lock against its writes; writes into reserved (unwritten) blocks would only add the extent conversion
  // to every fdatasync.
  if (!opts_.preallocate || opts_.sync.mode == sync_mode::always) return;
  if (auto st = active_->preallocate(opts_.segment_bytes); !st && !preallocate_failed_) {
    preallocate_failed_ = true;
    log::warn("storage: {}: cannot preallocate segments ({}); appends allocate as they go", dir_,
              st.err().reason);
  }
}

error log_writer::undo(const error& cause, segment_id start_segment, std::uint64_t start_size, lsn start_lsn,
                       std::vector<std::shared_ptr<writable_file>>& retired) {
  log::warn("storage: {}: batch from lsn {} failed ({}); undoing it", dir_, start_lsn.value(), cause.reason);
  next_lsn_ = start_lsn;
  status st;
  bool removed = false;
  while (st && segments_.back().id != start_segment) {
    active_.reset();
    st = env_.remove_file(segment_path(segments_.back().id));
    segments_.pop_back();
    active_ = std::move(retired.back());
    retired.pop_back();
    removed = true;
  }
  if (st && removed) st = env_.sync_dir(dir_);
  // Cut the file back and make the cut durable, so no record of the failed batch can reappear after a
  // crash (the client was told it failed).
  if (st) st = active_->truncate(start_size);
  active_prepared_ = 0;  // the cut dropped the zeros past start_size: the segment grows from here
  if (st) st = sync_active();
  if (!st) {
    log::error("storage: {}: cannot undo a failed batch ({}); the log is read-only until restart", dir_,
               st.err().reason);
    poisoned_ =
        make_error(errc::poisoned, fmt::format("log {} needs a restart after: {}", dir_, st.err().reason));
    // Part of the batch may already be durable (a roll syncs the old segment) and the cut is not: these
    // records may or may not survive a crash, so say so rather than report a clean failure.
    return make_error(errc::poisoned,
                      fmt::format("{}; undo failed ({}): the records may or may not be in the log",
                                  cause.reason, st.err().reason));
  }
  segments_.back().size = start_size;
  segments_.back().last = lsn{start_lsn.value() - 1};
  return cause;
}

void log_writer::periodic_sync() {
  if (auto st = sync_active(); !st) {
    // Records were already acknowledged in this mode; the page cache may have dropped them. Stop taking
    // writes rather than build on a log of unknown content.
    log::error("storage: {}: periodic fdatasync failed ({}); the log is read-only until restart", dir_,
               st.err().reason);
    poisoned_ =
        make_error(errc::poisoned, fmt::format("log {} needs a restart after: {}", dir_, st.err().reason));
  }
  dirty_ = false;
  last_sync_ = std::chrono::steady_clock::now();
}

void log_writer::request_background_sync() {
  last_sync_ = std::chrono::steady_clock::now();  // also when busy: try again one interval later
  {
    std::lock_guard lock(flusher_.mu);
    if (flusher_.running || flusher_.file) return;  // the previous sync is slow; dirty_ stays set
    flusher_.file = active_;
  }
  dirty_ = false;
  wake_flusher();
}

void log_writer::handle_syncs(std::vector<sync_callback>& syncs) {
  if (syncs.empty()) return;
  poison_after_background_failure();
  if (poisoned_) {
    exec_([syncs = std::move(syncs), err = *poisoned_]() mutable {
      for (auto& s : syncs) s(err);
    });
    return;
  }
  if (opts_.sync.mode == sync_mode::always) {
    // Every batch written so far was synced before its completions (a failed one was cut back, the cut
    // synced): nothing written is unsynced.
    exec_([syncs = std::move(syncs)]() mutable {
      for (auto& s : syncs) s(status{});
    });
    return;
  }
  // A sync of the active segment that starts after now covers every record written so far (a roll synced
  // the segments before it). If the flusher is busy with an older sync, this one runs right after it.
  {
    std::lock_guard lock(flusher_.mu);
    flusher_.file = active_;
    for (auto& s : syncs) flusher_.waiters.push_back(std::move(s));
  }
  syncs.clear();
  dirty_ = false;
  last_sync_ = std::chrono::steady_clock::now();
  wake_flusher();
}

void log_writer::flusher_run() {
  std::unique_lock lock(flusher_.mu);
  for (;;) {
    flusher_.cv.wait(lock, [&] { return flusher_.stop || flusher_.file; });
    if (!flusher_.file) return;  // stopping with nothing requested
    sync_requested(lock);
  }
}

void log_writer::sync_requested(std::unique_lock<std::mutex>& lock) {
  std::shared_ptr<writable_file> file = std::move(flusher_.file);
  std::vector<sync_callback> waiters = std::move(flusher_.waiters);
  flusher_.waiters.clear();
  flusher_.running = true;
  // After a failed fdatasync a later one may succeed without the pages the kernel dropped: never report
  // a sync as done once one failed.
  const std::optional<error> failed_before = flusher_.failure;
  lock.unlock();
  status st;
  if (failed_before) {
    st = *failed_before;
  } else {
    syncs_.fetch_add(1, std::memory_order_relaxed);
    const auto began = std::chrono::steady_clock::now();
    st = file->sync();
    sync_us_.observe_shared(micros_since(began));
  }
  file.reset();
  lock.lock();
  // Recorded before the waiters learn of it, so that an append they make next is refused.
  if (!st && !failed_before) {
    if (!flusher_.failure) flusher_.failure = st.err();
    failed_periodic_syncs_.fetch_add(1, std::memory_order_relaxed);
  }
  flusher_.running = false;
  if (!waiters.empty()) {
    lock.unlock();  // the executor may run inline
    exec_([waiters = std::move(waiters), st]() mutable {
      for (auto& w : waiters) w(st);
    });
    lock.lock();
  }
}

void log_writer::do_checkpoint(pending_checkpoint& c) {
  if (c.covered >= next_lsn_) {
    exec_([done = std::move(c.done), covered = c.covered, next = next_lsn_] {
      done(make_error(errc::invalid_argument, fmt::format("checkpoint at lsn {} but the log ends at {}",
                                                          covered.value(), next.value() - 1)));
    });
    return;
  }
  // The checkpoint is durable (and older ones removed) before any segment goes: a crash in between leaves
  // segments recovery only probes, never records it needs.
  status st = checkpoint_store(env_, dir_).write(c.covered, c.blob);
  if (!st) {
    exec_([done = std::move(c.done), err = st.err()] { done(err); });
    return;
  }
  exec_([done = std::move(c.done), removed = reclaim(c.covered, c.keep)]() mutable {
    done(std::move(removed));
  });
}

std::vector<segment_id> log_writer::reclaim(lsn covered, const std::vector<segment_id>& keep) {
  // Any order, and gaps are fine: recovery only probes the headers of the segments a checkpoint wholly
  // covers, and tolerates holes among them (log-format.md, "Recovery rules").
  std::vector<segment_id> removed;
  for (std::size_t i = 0; i + 1 < segments_.size();) {  // never the active segment (back)
    const segment_info& s = segments_[i];
    if (s.last > covered || std::find(keep.begin(), keep.end(), s.id) != keep.end()) {
      ++i;
      continue;
    }
    status rm = env_.remove_file(segment_path(s.id));
    if (!rm && errc_of(rm.err()) != errc::not_found) {
      log::warn("storage: {}: reclaim of segment {} failed ({}); retrying at the next checkpoint", dir_,
                s.id.value(), rm.err().reason);
      ++i;
      continue;
    }
    removed.push_back(s.id);
    segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  publish_segments();
  if (!removed.empty()) {
    // Not needed for safety (a removed segment that comes back after a crash is only probed, and reclaimed
    // again by the next checkpoint), only so the space is really free.
    if (auto st = env_.sync_dir(dir_); !st) {
      log::warn("storage: {}: directory sync after reclaim failed: {}", dir_, st.err().reason);
    }
  }
  return removed;
}

}  // namespace weir::storage

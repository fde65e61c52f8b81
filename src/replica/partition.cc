#include "replica/partition.h"

#include <algorithm>

#include "base/log.h"
#include "replica/cluster_cold_snapshots.h"
#include "replica/cold_mover.h"
#include "replica/cold_snapshots.h"
#include "replica/cold_state.h"
#include "replica/wal_recovery.h"
#include "streams/command_codec.h"
#include "streams/json_stored.h"

namespace weir::replica {

// The local commit path of a single node: the partition's own write-ahead log.
class partition::local_commit final : public commit_path {
 public:
  explicit local_commit(partition& p) : p_(p) {}
  streams::outcome submit(const streams::command& c, completion done) override {
    return p_.submit(c, std::move(done));
  }
  std::size_t in_flight() const override { return p_.in_flight(); }
  std::size_t in_flight_bytes() const override { return p_.in_flight_bytes(); }
  void linearize(const std::string& path, std::int64_t now_ms, std::function<void(bool)> ready) override {
    // Lazy expiry of a stream past its TTL, answered in order behind the commands before it.
    (void)p_.submit(streams::expire_command{path, now_ms},
                    [ready = std::move(ready)](durable_result&) { ready(true); });
  }
  void prepare_read(const std::string& path, std::int64_t now_ms,
                    std::function<void(errc, streams::errc)> ready) override {
    // Reads renew a sliding TTL, live ones when they begin (PROTOCOL.md 5.1, Stream-TTL); the read itself
    // sees only durable data (shard_wal::clamp), so it need not wait for the renewal.
    const streams::outcome touched = p_.submit(streams::touch_command{path, now_ms});
    ready(errc::ok, touched.code);
  }
  bool leads(const std::string&) const override { return true; }
  bool left() const override { return false; }
  bool names_forks() const override { return false; }
  bool same_log(std::string_view, std::string_view) const override { return true; }

 private:
  partition& p_;
};

partition::partition(raft::executor& ex, const clock_source& clock, partition_options opts,
                     partition_host& host)
    : ex_(&ex),
      clock_(&clock),
      opts_(opts),
      host_(&host),
      local_(std::make_unique<local_commit>(*this)),
      commit_(local_.get()),
      hot_(std::make_unique<tier::hot_tier>(opts.hot_bytes, std::vector<storage::segment_reader*>{})),
      cold_latency_(metrics::latency_us_bounds) {
  // Fork points in bytes this partition's replicas may have forgotten are decided by the replicated
  // index alone (state_machine::set_cold_boundary): a JSON source's extents hold whole records, so a
  // record begins where an extent does; elsewhere the retain carries what an object's record table says.
  sm_.set_cold_boundary(
      [this](std::string_view stream,
             streams::stream_offset point) -> std::optional<streams::state_machine::cold_point> {
        auto end = cold_index_.cold_end(stream);
        if (!end || point >= *end) return std::nullopt;
        auto where = cold_index_.find(stream, point);
        return streams::state_machine::cold_point{where && where->extent->first == point, *end};
      });
}

partition::~partition() = default;

void partition::attach_cold(const cold_mover_options& o, tier::uploader::put_fn put,
                            std::uint64_t local_bytes) {
  mover_ = std::make_unique<cold_mover>(*this, o, std::move(put));
  local_bytes_budget_ = local_bytes;
}

void partition::recount_cold() {
  if (mover_) mover_->count_all();
}

bool partition::local_budget_full() const {
  return mover_ && local_bytes_budget_ > 0 && mover_->local_bytes() >= local_bytes_budget_;
}

void partition::attach_cold_snapshots(const cold_snapshot_options& o, cold_snapshot_io io) {
  snapshots_ = std::make_unique<cold_snapshots>(*this, o, std::move(io));
}

void partition::attach_cluster_snapshots(std::unique_ptr<cluster_cold_snapshots> s) {
  cluster_snapshots_ = std::move(s);
}

void partition::start_cold() {
  if (mover_) mover_->start();
  if (snapshots_) snapshots_->start();
  if (cluster_snapshots_) cluster_snapshots_->start();
}

void partition::attach_segments(storage::env& e, std::string dir,
                                std::vector<storage::segment_reader*> readers) {
  env_ = &e;
  log_dir_ = std::move(dir);
  own_segments_ = opts_.core < readers.size() ? readers[opts_.core] : nullptr;
  hot_ = std::make_unique<tier::hot_tier>(opts_.hot_bytes, std::move(readers));
}

void partition::attach_wal(std::unique_ptr<storage::log_writer> writer, storage::lsn last) {
  checkpointer_.reset();
  wal_ = std::make_unique<shard_wal>(std::move(writer), last);
  checkpointer_ = std::make_unique<checkpointer>(*wal_, sm_, cold_index_, opts_.core, opts_.checkpoint_bytes,
                                                 own_segments_, *ex_, [this] { host_->on_writes_resumed(); });
  wal_->on_failure([this] { schedule_rebuild(std::chrono::milliseconds(1000)); });
}

void partition::follow_cold(const streams::command& c, const streams::outcome& o) {
  follow_command(cold_index_, sm_, c, o);
  // Counted against the budget at once, not at the mover's next pass: a fast writer would run past it.
  if (mover_ && o.mutated && o.code == streams::errc::ok) mover_->note_applied(c, o);
}

void partition::follow_applied(const streams::command& c, const streams::outcome& o) {
  follow_cold(c, o);
  if (mover_ && o.mutated && o.code == streams::errc::ok && o.meta) mover_->note_written(o.meta->path);
}

result<tier::cold_apply_result> partition::apply_index_entry(std::span<const std::byte> record) {
  std::vector<std::string> touched;
  auto applied = apply_index_record(cold_index_, sm_, record, &touched);
  if (mover_) {
    for (const std::string& path : touched) mover_->note_changed(path);  // their cold ends moved
  }
  return applied;
}

streams::outcome partition::submit(const streams::command& c, completion done) {
  wal_->before(c, sm_, now_ms());
  streams::outcome o = sm_.apply(c);
  if (o.mutated) recount_streams();
  follow_cold(c, o);
  wal_->after(c, o, [this, done = std::move(done)](durable_result& r) {
    if (r.failure == errc::ok) {
      if (r.at.known() && r.o.meta && r.o.code == streams::errc::ok) {
        admit(r);
        if (mover_) mover_->note_written(r.o.meta->path);
      }
      host_->on_durable(r.o);
    }
    if (done) done(r);
  });
  if (checkpointer_) checkpointer_->poll();
  return o;
}

result<tier::cold_apply_result> partition::submit_index_record(std::vector<std::byte> record,
                                                               completion done) {
  auto applied = apply_index_entry(record);
  if (!applied) return applied;  // never logged: a replay would refuse it the same way
  if (applied->recorded) wal_->log_record(cold_index_record_type, std::move(record), std::move(done));
  return applied;
}

std::optional<errc> partition::write_failure() const {
  if (wal_->failed()) return wal_->failure();
  return std::nullopt;
}

void partition::admit(const durable_result& r) {
  streams::disk_location at = r.at;
  at.core = opts_.core;
  const streams::stream_meta& m = *r.o.meta;
  // The command's record is the stream's last: it ends at the tail the command reported.
  hot_->admit(sm_, m.generation, m.tail.value(), r.data_size, at);
}

void partition::schedule_rebuild(std::chrono::milliseconds delay) {
  if (stopped_ || rebuild_timer_ != 0) return;
  // Writes get 507/503 (Retry-After) meanwhile; the delay keeps a full disk from costing a rebuild
  // per request.
  rebuild_timer_ = ex_->add_timer(delay, [this] {
    rebuild_timer_ = 0;
    wal_->when_idle([this] { rebuild(); });
  });
}

void partition::rebuild() {
  if (stopped_ || !wal_->failed()) return;
  if (!wal_->recoverable()) {
    log::error("weir serve: core {}: the log is in an unknown state; writes stay refused until a restart",
               opts_.core);
    return;
  }
  if (!env_ || checkpointer_->writing()) {
    schedule_rebuild(std::chrono::milliseconds(50));
    return;
  }
  const auto began = std::chrono::steady_clock::now();
  wal_recovery_stats stats;
  if (status st = rebuild_core(*env_, log_dir_, opts_.core, sm_, cold_index_, hot_, stats); !st) {
    log::error("weir serve: core {}: rebuilding the state from the log failed ({}); retrying", opts_.core,
               st.err().reason);
    schedule_rebuild(std::chrono::milliseconds(1000));
    return;
  }
  wal_->clear_failure();
  wal_->writer()->resume();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  log::info(
      "weir serve: core {}: state rebuilt from the log in {:.1f} ms ({} commands replayed); writes resume",
      opts_.core, ms, stats.records);
  recount_cold();
  // Live readers may have been told about nothing the log lost (they only see durable data); they
  // re-read against the rebuilt state.
  host_->on_rebuilt();
}

streams::read_result partition::read_visible(const std::string& path,
                                             std::optional<streams::stream_offset> from,
                                             std::size_t max_bytes, status* io) const {
  streams::read_result rr = sm_.read(path, from, max_bytes);
  wal_->clamp(path, rr);
  if (status st = hot_->resolve(rr.plan); !st) {
    log::error("weir serve: {}: reading stored data failed: {}", path, st.err().reason);
    if (io) *io = st;
  }
  return rr;
}

streams::read_result partition::read_planned(const std::string& path,
                                             std::optional<streams::stream_offset> from,
                                             std::size_t max_bytes) const {
  streams::read_result rr = sm_.read(path, from, max_bytes);
  wal_->clamp(path, rr);
  return rr;
}

streams::read_result partition::head_visible(const std::string& path) const {
  streams::read_result rr = sm_.head(path, now_ms());
  wal_->clamp(path, rr);
  return rr;
}

bool partition::read_cold(std::string path, streams::read_result rr, read_done done, bool may_refuse) {
  if (may_refuse && cold_waiting_.size() >= opts_.max_cold_waiting) return false;
  if (rr.plan.in_objects) {
    // Reads from the bucket are slower than the disk and cost the store requests: a bounded number in
    // flight; a new request beyond it gets 503 + Retry-After rather than a place in an endless queue.
    if (may_refuse && objects_in_flight_ >= opts_.max_object_reads) return false;
    read_objects(std::move(path), std::move(rr), std::move(done));
    return true;
  }
  streams::read_plan plan = std::move(rr.plan);
  rr.plan = {};
  read_slices(std::move(plan), [this, path = std::move(path), rr = std::move(rr), done = std::move(done)](
                                   streams::read_plan p, status io) mutable {
    if (!io) log::error("weir serve: {}: reading stored data failed: {}", path, io.err().reason);
    rr.plan = std::move(p);
    drop_if_replaced(path, rr);
    done(rr, io);
  });
  return true;
}

std::optional<streams::stream_meta> partition::drop_if_replaced(const std::string& path,
                                                                streams::read_result& rr) const {
  // The state moved on while the read was in flight. The bytes read are immutable, but the stream may
  // be gone, or gone and created again at the same path: then its old bytes are not served.
  streams::read_result now = sm_.head(path, now_ms());
  if (now.code != streams::errc::ok || !now.meta || !rr.meta || now.meta->generation != rr.meta->generation) {
    rr.code = now.code != streams::errc::ok ? now.code : streams::errc::not_found;
    rr.plan = {};
    return std::nullopt;
  }
  return std::move(now.meta);
}

void partition::observe_cold_read(std::chrono::steady_clock::time_point began) {
  ++cold_done_;
  cold_latency_.observe(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - began)
          .count()));
}

std::optional<partition::object_location> partition::locate_objects(const std::string& stream,
                                                                    streams::stream_offset from) const {
  auto where = cold_index_.find(stream, from);
  if (!where) return std::nullopt;
  object_location at{*where->object, *where->extent, where->extent->end};
  // A JSON read from objects may take bytes up to the held records (or the extent's end) whole.
  if (auto log = sm_.log_of(stream)) at.whole_end = std::min(at.extent.end, log->held_from());
  return at;
}

void partition::read_objects(std::string path, streams::read_result rr, read_done done) {
  const streams::object_span span = *rr.plan.in_objects;
  auto fail = [this, rr, done](const std::string& why) mutable {
    rr.plan.in_objects.reset();
    ex_->post([rr = std::move(rr), done = std::move(done), why]() mutable {
      done(rr, make_error(storage::errc::io_error, why));
    });
  };
  if (!fetch_object_)
    return fail("bytes " + std::to_string(span.from.value()) + " of " + span.stream +
                " are in the bucket, and the node has no cold tier");
  auto missing = [span] {
    return "no object holds bytes " + std::to_string(span.from.value()) + " of " + span.stream;
  };
  // A fork's inherited bytes whose source (span.stream) is another partition's are placed by that
  // partition's index, asked on its loop: counted in flight from here, so the bound on reads from the
  // bucket holds.
  const char* index = foreign(span.stream) ? " in its owner's index" : " in this shard's index";
  ++objects_in_flight_;
  locate_bytes(span.stream, span.from,
               [this, path = std::move(path), rr = std::move(rr), done = std::move(done), fail, missing,
                index](std::optional<object_location> where) mutable {
                 --objects_in_flight_;
                 if (!where) return fail(missing() + index);
                 read_located(std::move(path), std::move(rr), std::move(done), std::move(*where));
               });
}

void partition::read_located(std::string path, streams::read_result rr, read_done done,
                             object_location where) {
  const streams::object_span span = *rr.plan.in_objects;
  const tier::cold_extent& e = where.extent;
  const std::uint64_t end = std::min(span.until.value(), e.end.value());
  // A JSON stream's read must end at a message boundary (docs/cold-tier.md, "JSON streams"): the bytes
  // are cut after their last whole message, and when not even one ends in them, the read takes the rest
  // of the extent (its records went whole into the object, so a message ends there).
  const bool json = rr.meta && rr.meta->json;
  const std::uint64_t whole_end = json ? where.whole_end.value() : end;
  fetch_range(std::move(path), std::move(rr), std::move(done), span.from, end - span.from.value(),
              whole_end - span.from.value(), std::move(where.object), e, json);
}

void partition::fetch_range(std::string path, streams::read_result rr, read_done done,
                            streams::stream_offset from, std::uint64_t length, std::uint64_t whole_length,
                            tier::cold_object_ref object, tier::cold_extent e, bool json) {
  const std::uint64_t position = e.data_position + (from.value() - e.first.value());
  const auto began = std::chrono::steady_clock::now();
  ++objects_in_flight_;
  const std::string key = object.key;
  fetch_object_(
      key, object.size, position, length,
      [this, path = std::move(path), rr = std::move(rr), done = std::move(done), from, length, whole_length,
       object = std::move(object), e, json, began](tier::store_result<tier::object_bytes> got) mutable {
        --objects_in_flight_;
        observe_cold_read(began);
        ++bucket_reads_;
        status io;
        std::uint64_t keep = length;
        if (!got) {
          io = got.err().to_error();
        } else if (got->size() != length) {
          io = make_error(storage::errc::io_error, "the bucket returned " + std::to_string(got->size()) +
                                                       " bytes of " + std::to_string(length));
        } else if (json) {
          keep = streams::whole_messages_prefix(
              std::string_view(reinterpret_cast<const char*>(got->data()), got->size()));
          if (keep == 0 && length < whole_length) {
            // Not one whole message in the bytes asked for: the rest of the extent holds one.
            return fetch_range(std::move(path), std::move(rr), std::move(done), from, whole_length,
                               whole_length, std::move(object), e, json);
          }
          if (keep == 0) {
            io = make_error(storage::errc::corruption,
                            "no whole JSON message in bytes " + std::to_string(from.value()) + " to " +
                                std::to_string(from.value() + length) + " in the bucket");
          }
        }
        rr.plan.in_objects.reset();
        if (io) {
          streams::chunk_slice s;
          s.size = static_cast<std::uint32_t>(keep);
          s.buf = streams::make_chunk(std::string(reinterpret_cast<const char*>(got->data()), keep));
          rr.plan.slices.push_back(std::move(s));
          rr.plan.bytes = keep;
          rr.plan.next = streams::stream_offset(from.value() + keep);
          rr.plan.up_to_date = false;
        }
        if (!io) {
          ++bucket_read_failures_;
          log::error("weir serve: {}: reading bytes from the bucket failed: {}", path, io.err().reason);
        }
        if (auto now = drop_if_replaced(path, rr); now && io) rr.plan.up_to_date = rr.plan.next == now->tail;
        done(rr, io);
      });
}

std::uint64_t partition::forget_cold(const std::string& path, streams::stream_offset pos) {
  auto log = sm_.log_of(path);
  if (!log) return 0;
  auto end = cold_index_.cold_end(path);
  if (!end || pos > *end) return 0;
  // A restore snapshot being built reads the records of its cut from the segments: they stay.
  if (snapshots_ && snapshots_->busy()) return 0;
  // Nor while a checkpoint's cut is encoded off the loop: it reads the records by their index in the log.
  if (checkpointer_ && checkpointer_->encoding()) return 0;
  // The owner core is the only writer of its logs (stream_log.h); log_of hands out a const view.
  const std::uint64_t forgotten = std::const_pointer_cast<streams::memory_log>(log)->forget_before(pos);
  if (mover_ && forgotten > 0) mover_->note_changed(path);
  return forgotten;
}

void partition::request_checkpoint() {
  if (checkpointer_) checkpointer_->request();
  if (data_log_) data_log_->request_reclaim();  // a cluster node: the data log's segments go instead
}

void partition::snapshot_for_bucket(std::function<void(result<checkpointer::bucket_cut>)> fn) {
  if (!checkpointer_) {
    fn(make_error(storage::errc::io_error, "no write-ahead log"));
    return;
  }
  checkpointer_->snapshot_for_bucket(std::move(fn));
}

std::vector<std::pair<std::string, streams::stream_offset>> partition::forgettable_cold() const {
  std::vector<std::pair<std::string, streams::stream_offset>> out;
  cold_index_.for_each_cold_end([&](std::string_view stream, streams::stream_offset end) {
    std::string path(stream);
    streams::read_result head = head_visible(path);
    if (head.code != streams::errc::ok || !head.meta) return;
    out.emplace_back(std::move(path), end);
  });
  return out;
}

void partition::read_slices(streams::read_plan plan, tier::cold_reader::completion done) {
  cold_waiting_.push_back(cold_job{std::move(plan), std::move(done), std::chrono::steady_clock::now()});
  dispatch_cold();
}

void partition::dispatch_cold() {
  while (cold_in_flight_ < std::max<std::size_t>(1, opts_.max_cold_reads) && !cold_waiting_.empty()) {
    cold_job j = std::move(cold_waiting_.front());
    cold_waiting_.pop_front();
    ++cold_in_flight_;
    streams::read_plan plan = std::move(j.plan);
    j.plan = {};
    auto back = [this, j = std::move(j)](streams::read_plan p, status io) mutable {
      finish_cold(j, std::move(p), std::move(io));
    };
    if (cold_) {
      // The segment readers are the node's and outlive the read; a segment reclaimed meanwhile was
      // either still open (its file stays readable until closed) or fails to open: the read then fails
      // like any other (the plan is cut, 503 or a shorter answer).
      cold_->submit(hot_->readers(), std::move(plan), *cold_home_, std::move(back));
    } else {
      ex_->post([readers = hot_->readers(), plan = std::move(plan), back = std::move(back)]() mutable {
        status io = tier::hot_tier::resolve_slices(readers, plan);
        back(std::move(plan), std::move(io));
      });
    }
  }
}

void partition::finish_cold(cold_job& j, streams::read_plan plan, status io) {
  --cold_in_flight_;
  observe_cold_read(j.began);
  j.done(std::move(plan), std::move(io));
  dispatch_cold();
}

status partition::open_data_log(storage::env& e, const std::string& dir, std::uint64_t segment_bytes,
                                std::vector<storage::segment_reader*> readers, storage::disk_worker* worker) {
  attach_segments(e, dir, std::move(readers));
  tier::data_log_options o;
  o.core = opts_.core;
  o.segment_bytes = segment_bytes;
  // Memory holds the hot budget plus what waits for a sync: keep the latter a fraction of the budget.
  o.sync_bytes = std::clamp<std::uint64_t>(opts_.hot_bytes / 4, 64u << 10, 8u << 20);
  o.reclaim_bytes = std::max<std::uint64_t>(segment_bytes / 2, 1);
  // Batches of records to the writer's thread (not a wake-up per turn): a record reaches the disk at most
  // a tick (250 ms) after its apply, well within the interval it waits for its sync.
  o.hand_over_bytes = std::min<std::uint64_t>(64u << 10, o.sync_bytes);
  tier::data_log::hooks h;
  h.locate = [this](std::uint64_t generation, std::uint64_t end, const streams::disk_location& at) {
    return sm_.locate(generation, end, at);
  };
  h.admit = [this](std::uint64_t generation, std::uint64_t end, std::uint32_t size,
                   const streams::disk_location& at) { hot_->admit(sm_, generation, end, size, at); };
  h.referenced = [this] { return sm_.referenced_segments(opts_.core); };
  raft::executor* ex = ex_;
  auto d = tier::data_log::open(
      e, dir, o, [ex](std::function<void()> fn) { ex->post(std::move(fn)); }, own_segments_, std::move(h),
      worker);
  if (!d) return d.err();
  data_log_ = std::move(*d);
  return {};
}

void partition::write_applied(const streams::command& c, const streams::outcome& o,
                              const streams::disk_location* stored) {
  if (o.code != streams::errc::ok || !o.mutated || !o.meta) return;
  if (stored != nullptr) {
    const streams::payload* data = streams::command_data(c);
    if (data == nullptr || data->empty()) return;
    ++node_log_records_;
    node_log_record_bytes_ += data->size();
    hot_->admit(sm_, o.meta->generation, o.meta->tail.value(), static_cast<std::uint32_t>(data->size()),
                *stored);
    return;
  }
  // Nobody waits for it: raft made the command durable.
  if (data_log_) data_log_->write(c, o.meta->generation, o.meta->tail.value());
}

void partition::pin_snapshot_segments(std::uint32_t group, std::vector<std::uint64_t> segments) {
  if (data_log_) data_log_->pin(group, std::move(segments));
}

void partition::persist_unlocated(const streams::state_machine::path_predicate& in_part) {
  if (!data_log_) return;
  struct found {
    std::string path;
    std::uint64_t generation;
    streams::record r;
  };
  std::vector<found> all;  // collected first: writing does not touch the logs being walked
  sm_.for_each_unlocated([&](std::string_view path, std::uint64_t generation, const streams::record& r) {
    if (in_part(path)) all.push_back(found{std::string(path), generation, r});
  });
  for (const found& f : all) data_log_->write_record(f.path, f.generation, f.r);
}

void partition::tick(std::int64_t now_ms) {
  if (data_log_) data_log_->tick(now_ms);
}

void partition::stop() {
  stopped_ = true;
  if (mover_) mover_->stop();
  if (snapshots_) snapshots_->stop();
  if (cluster_snapshots_) cluster_snapshots_->stop();
  if (rebuild_timer_ != 0) ex_->cancel_timer(rebuild_timer_);
  rebuild_timer_ = 0;
}

}  // namespace weir::replica

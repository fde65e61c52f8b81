#include "server/stream_shard.h"

#include <algorithm>

#include "base/log.h"
#include "protocol/cursor.h"
#include "protocol/json_mode.h"
#include "protocol/stream_responses.h"
#include "replica/wal_recovery.h"
#include "server/live_reader.h"
#include "server/node.h"
#include "server/replication.h"
#include "server/reply.h"
#include "tier/cold_reader.h"

namespace weir::server {

using protocol::operation;

stream_shard::stream_shard(node& owner, io::event_loop& loop, const clock_source& clock, shard_options opts)
    : node_(&owner),
      loop_(&loop),
      ex_(loop),
      clock_(&clock),
      opts_(opts),
      part_(ex_, clock, opts.part, *this),
      sm_(part_.machine()),
      rng_(std::random_device{}()) {}

stream_shard::~stream_shard() = default;

namespace {
// A command whose log record could not be written, or data that could not be read (storage_full or
// storage_unavailable). The detail (file names, system errors) was logged where it happened and never
// reaches the client.
protocol::response storage_failure(replica::errc failure) {
  return protocol::error_response(protocol::status_for(failure));
}
}  // namespace

void stream_shard::attach_replication(std::unique_ptr<replication> r) {
  repl_ = std::move(r);
  part_.use_commit_path(repl_->core());  // every command through raft from now on
}

void stream_shard::post_to_lane(std::uint32_t lane, std::function<void()> fn) {
  node_->shard(lane).loop().post(std::move(fn));
}

void stream_shard::fail(const std::string& why) {
  node_->fail(why);
}

void stream_shard::on_restored(const streams::state_machine::path_predicate& in_part,
                               const std::vector<std::string>& removed) {
  for (const std::string& path : removed) node_->report_deleted(path);
  // Every live reader of the part looks again (its stream may have grown, closed, or gone).
  std::vector<std::string> paths;
  for (const auto& [path, reader] : readers_)
    if (in_part(path) && (paths.empty() || paths.back() != path)) paths.push_back(path);
  for (const std::string& path : paths)
    wake(path, std::find(removed.begin(), removed.end(), path) != removed.end());
}

void stream_shard::on_rebuilt() {
  std::vector<std::shared_ptr<live_reader>> all;
  for (auto& [path, r] : readers_) all.push_back(r);
  for (auto& r : all) r->wake();
}

bool stream_shard::refuse_write(http::exchange ex, const protocol::cors_grant& cors) {
  if (auto failure = part_.write_failure()) {
    send_response(ex, storage_failure(*failure), cors);
    return true;
  }
  const std::size_t in_flight = part_.commit().in_flight();
  const std::size_t in_flight_bytes = part_.commit().in_flight_bytes();
  if (in_flight >= opts_.max_in_flight || in_flight_bytes >= opts_.max_in_flight_bytes) {
    send_response(ex, protocol::error_response(protocol::status_for(replica::errc::writes_backlogged)), cors);
    return true;
  }
  return false;
}

bool stream_shard::defer_write(protocol::stream_request& req, http::exchange ex, std::uint64_t live_id) {
  if (!part_.holding_writes()) return false;
  deferred_.push_back(
      [this, req = std::move(req), ex, live_id]() mutable { handle(std::move(req), ex, live_id); });
  return true;
}

// A burst of large writes proposed all at once reaches raft as one flood: tens of MiB copied, logged and
// sent to every follower in the same few turns of every node's loop, long enough for followers to miss
// heartbeats and elect again, and for proposals to run out their deadlines (503, outcome unknown). Held
// here instead, in arrival order, they reach raft a few MiB at a time. Not a rejection: a write that
// waits longer than admit_wait_ms gets 503 writes_backlogged (nothing was written).
bool stream_shard::admit_later(protocol::stream_request& req, http::exchange ex, std::uint64_t live_id) {
  if (admitting_ || opts_.admit_bytes == 0) return false;
  if (admission_.empty() && part_.commit().in_flight_bytes() < opts_.admit_bytes) return false;
  waiting_write w;
  w.since_ms = now_ms();
  w.ex = ex;
  w.cors = req.cors;
  w.run = [this, req = std::move(req), ex, live_id]() mutable { handle(std::move(req), ex, live_id); };
  admission_.push_back(std::move(w));
  arm_admission_timer();
  return true;
}

void stream_shard::arm_admission_timer() {
  if (admission_.empty() || admission_timer_ != 0) return;
  admission_timer_ = loop_->add_timer(std::chrono::milliseconds(250), [this] {
    admission_timer_ = 0;
    expire_waiting_writes();
  });
}

void stream_shard::in_flight_went_down() {
  if (admission_.empty() || admit_posted_ || part_.commit().in_flight_bytes() >= opts_.admit_bytes) return;
  admit_posted_ = true;
  loop_->post([this] {
    admit_posted_ = false;
    admit_waiting();
  });
}

void stream_shard::admit_waiting() {
  if (admitting_) return;
  admitting_ = true;
  // While there is room at all: a write larger than the limit goes once the bytes before it are under
  // it (waiting for nothing in flight could wait for good under a steady load).
  while (!admission_.empty() && !stopped_ && part_.commit().in_flight_bytes() < opts_.admit_bytes) {
    std::function<void()> run = std::move(admission_.front().run);
    admission_.pop_front();
    ++admitted_after_wait_;
    run();
  }
  admitting_ = false;
}

void stream_shard::expire_waiting_writes() {
  const std::int64_t now = now_ms();
  while (!admission_.empty() && now - admission_.front().since_ms >= opts_.admit_wait_ms) {
    waiting_write w = std::move(admission_.front());
    admission_.pop_front();
    ++admission_expired_;
    send_response(w.ex, protocol::error_response(protocol::status_for(replica::errc::writes_backlogged)),
                  w.cors);
  }
  admit_waiting();  // nothing in flight (proposals all failed): the next ones go now
  arm_admission_timer();
}

void stream_shard::resume_deferred() {
  std::deque<std::function<void()>> held = std::move(deferred_);
  deferred_.clear();
  for (auto& fn : held) fn();
}

std::string stream_shard::cursor(const std::optional<std::string>& client_cursor) {
  std::uniform_int_distribution<std::uint32_t> jitter(1, 3600);
  std::optional<std::string_view> theirs;
  if (client_cursor) theirs = *client_cursor;
  return protocol::next_cursor(now_ms(), theirs, jitter(rng_));
}

void stream_shard::handle(protocol::stream_request req, http::exchange ex, std::uint64_t live_id) {
  if (part_.commit().left()) {
    // Its replicas stop where it left: reads would be stale, and no leader takes its writes.
    send_response(ex, protocol::error_response(protocol::status_for(replica::errc::cluster_left)), req.cors);
    return;
  }
  const std::int64_t now = now_ms();
  if (req.op == operation::append && req.has_body && !req.has_content_type) {
    // PROTOCOL.md 5.2: 400, answered here where the stream's own type is known.
    send_response(ex, protocol::missing_content_type(part_.head_visible(req.path)), req.cors);
    return;
  }
  if (req.op == operation::create || req.op == operation::append || req.op == operation::remove) {
    if (defer_write(req, ex, live_id) || refuse_write(ex, req.cors) || admit_later(req, ex, live_id)) return;
  }
  if ((req.op == operation::create || req.op == operation::append) && part_.local_budget_full()) {
    // The cold tier is behind (docs/cold-tier.md, "The local budget"): deletes and reads go on.
    send_response(ex, protocol::error_response(protocol::status_for(replica::errc::cold_backlogged)),
                  req.cors);
    return;
  }
  switch (req.op) {
    case operation::create:
      handle_create(std::move(req), ex);
      return;
    case operation::append: {
      streams::append_command c;
      c.path = req.path;
      if (req.has_content_type) c.content_type = req.content_type;
      // JSON processing follows the request's own Content-Type: an append only succeeds when it
      // matches the stream's.
      c.body = std::move(req.payload);
      c.stream_seq = req.stream_seq;
      c.producer = req.producer;
      c.close = req.closed;
      c.now_ms = now;
      execute(c, [ex, req = std::move(req)](replica::durable_result& r) {
        send_response(
            ex,
            r.failure != replica::errc::ok ? storage_failure(r.failure) : protocol::append_response(r.o, req),
            req.cors);
      });
      return;
    }
    case operation::remove: {
      execute(streams::delete_command{req.path, now, opts_.deleted_path_hold_ms},
              [ex, cors = req.cors](replica::durable_result& r) {
                send_response(ex,
                              r.failure != replica::errc::ok ? storage_failure(r.failure)
                                                             : protocol::delete_response(r.o),
                              cors);
              });
      return;
    }
    case operation::head: {
      // HEAD does not renew a TTL; answered once it sees every write acknowledged before it (commit_path).
      part_.commit().linearize(req.path, now, [this, ex, path = req.path, cors = req.cors](bool ok) {
        send_response(ex,
                      ok ? protocol::head_response(part_.head_visible(path))
                         : storage_failure(replica::errc::cluster_unavailable),
                      cors);
      });
      return;
    }
    case operation::read:
      handle_read(std::move(req), ex, live_id);
      return;
    case operation::preflight:
      send_response(ex, protocol::preflight_response(), req.cors);
      return;
  }
}

void stream_shard::handle_create(protocol::stream_request req, http::exchange ex) {
  const std::int64_t now = now_ms();
  // The quota counts every core's streams (read without a lock: a few creates racing at the limit may
  // pass it by as many). An idempotent PUT of an existing stream is not a new stream.
  if (opts_.max_streams != 0 && node_->stream_count() >= opts_.max_streams &&
      sm_.head(req.path, now).code == streams::errc::not_found) {
    send_response(ex, protocol::error_response(protocol::status_for(protocol::errc::stream_quota)), req.cors);
    return;
  }
  streams::create_command c;
  c.path = req.path;
  c.content_type = req.content_type;
  c.expiry = req.expiry;
  c.closed = req.closed;
  c.now_ms = now;
  if (!req.fork) {
    c.initial = std::move(req.payload);
    execute(c, [ex, req = std::move(req)](replica::durable_result& r) {
      send_response(
          ex,
          r.failure != replica::errc::ok ? storage_failure(r.failure) : protocol::create_response(r.o, req),
          req.cors);
    });
    return;
  }
  // A fork: when the target already exists, compare configurations without touching the source.
  if (sm_.head(req.path, now).code != streams::errc::not_found) {
    c.fork = streams::fork_spec{req.fork->source, req.fork->offset, req.fork->sub_offset, {}};
    execute(c, [ex, req = std::move(req)](replica::durable_result& r) {
      send_response(
          ex,
          r.failure != replica::errc::ok ? storage_failure(r.failure) : protocol::create_response(r.o, req),
          req.cors);
    });
    return;
  }
  streams::fork_retain_command r{req.fork->source, req.fork->offset, req.fork->sub_offset, req.content_type,
                                 now};
  // A cluster's reference names its fork, so that the fork sweep can look for it (docs/replication.md).
  if (part_.commit().names_forks()) r.fork = req.path;
  stream_shard& source = node_->owner_of(r.source);
  // The retain is durable on the source's core before the fork's create is applied, so a replayed
  // create always finds its reference taken (docs/storage.md, "In the server").
  if (&source == this) {
    fork_retain(r, [this, req = std::move(req), ex](replica::durable_result& d) mutable {
      finish_fork(std::move(req), ex, std::move(d));
    });
    return;
  }
  source.loop().post([&source, self = this, r = std::move(r), req = std::move(req), ex]() mutable {
    source.fork_retain(r, [self, req = std::move(req), ex](replica::durable_result& d) mutable {
      self->loop().post([self, req = std::move(req), ex, d = std::move(d)]() mutable {
        self->finish_fork(std::move(req), ex, std::move(d));
      });
    });
  });
}

void stream_shard::fork_retain(const streams::fork_retain_command& c, replica::shard_wal::completion done) {
  // At a point whose records a replica may not have, the retain carries the record beginning there
  // (docs/cold-tier.md, "Forks").
  part_.prepare_retain(c, [this, done = std::move(done)](result<streams::fork_retain_command> ready) mutable {
    if (!ready) {
      replica::durable_result d;
      d.failure = replica::errc::storage_unavailable;
      d.reason = ready.err().reason;
      done(d);
      return;
    }
    (void)execute(*ready, std::move(done));
  });
}

void stream_shard::finish_fork(protocol::stream_request req, http::exchange ex, replica::durable_result d) {
  if (d.failure != replica::errc::ok) {
    send_response(ex, storage_failure(d.failure), req.cors);
    return;
  }
  if (refuse_write(ex, req.cors)) return;
  streams::outcome& retained = d.o;
  if (retained.code != streams::errc::ok) {
    send_response(ex, protocol::outcome_error(retained), req.cors);
    return;
  }
  if (retained.sub_record_in_objects) {
    // The record the sub-offset cuts is only in the bucket: its prefix is read from there (a JSON
    // record whole, to cut after its first messages), then the fork is created.
    const streams::object_span span = *retained.sub_record_in_objects;
    const bool json = protocol::is_json_content_type(retained.resolution->source_content_type);
    const std::uint64_t n = json ? span.until.value() - span.from.value() : req.fork->sub_offset;
    part_.read_bucket_bytes(
        span.stream, span.from, n,
        [this, req = std::move(req), ex, d = std::move(d)](result<std::string> bytes) mutable {
          if (bytes) {
            const auto size = static_cast<std::uint32_t>(bytes->size());
            d.o.sub_record->data = streams::chunk_slice{streams::make_chunk(std::move(*bytes)), 0, size, {}};
            create_fork(std::move(req), ex, std::move(d));
            return;
          }
          fork_source_unreadable(req, ex, d.o.resolution ? d.o.resolution->origin : std::nullopt,
                                 "from the bucket: " + bytes.err().reason);
        });
    return;
  }
  if (retained.sub_record && retained.sub_record->data.cold()) {
    // The record the sub-offset cuts left memory: read it off the loop, then create the fork. The
    // retain keeps the source's records, and so their segments, while the read is in flight.
    streams::read_plan p;
    p.slices.push_back(retained.sub_record->data);
    p.bytes = p.slices[0].size;
    p.next = streams::stream_offset(p.bytes);
    part_.read_slices(std::move(p), [this, req = std::move(req), ex, d = std::move(d)](streams::read_plan got,
                                                                                       status io) mutable {
      if (io && got.slices.size() == 1 && !got.slices[0].cold()) {
        d.o.sub_record->data = std::move(got.slices[0]);
        create_fork(std::move(req), ex, std::move(d));
        return;
      }
      fork_source_unreadable(req, ex, d.o.resolution ? d.o.resolution->origin : std::nullopt,
                             io ? std::string("no data") : io.err().reason);
    });
    return;
  }
  create_fork(std::move(req), ex, std::move(d));
}

void stream_shard::fork_source_unreadable(const protocol::stream_request& req, http::exchange ex,
                                          std::optional<streams::fork_origin> origin,
                                          const std::string& why) {
  log::error("weir serve: fork {}: reading the source record failed: {}", req.path, why);
  release({req.fork->source, origin});
  send_response(ex, storage_failure(replica::errc::storage_unavailable), req.cors);
}

void stream_shard::create_fork(protocol::stream_request req, http::exchange ex, replica::durable_result d) {
  streams::outcome& retained = d.o;
  streams::create_command c;
  c.path = req.path;
  c.content_type = req.content_type;
  c.expiry = req.expiry;
  c.closed = req.closed;
  c.now_ms = now_ms();
  streams::fork_spec f;
  f.source = req.fork->source;
  f.offset = req.fork->offset;
  f.sub_offset = req.fork->sub_offset;
  f.resolved = std::move(*retained.resolution);
  f.resolved.retained = true;
  bool source_json = protocol::is_json_content_type(f.resolved.source_content_type);
  if (retained.sub_record) {
    auto bytes = part_.bytes_of(retained.sub_record->data);
    if (!bytes) {
      fork_source_unreadable(req, ex, f.resolved.origin, bytes.err().reason);
      return;
    }
    std::string_view rec = *bytes;
    if (source_json) {
      f.resolved.prefix = protocol::json_prefix(rec, f.sub_offset);
    } else {
      f.resolved.prefix = protocol::make_payload(rec.substr(0, f.sub_offset), "application/octet-stream");
    }
  }
  c.initial = req.has_content_type ? std::move(req.payload)
                                   : protocol::make_payload(req.raw_body, f.resolved.source_content_type);
  c.fork = std::move(f);
  execute(c, [ex, req = std::move(req)](replica::durable_result& r) {
    send_response(
        ex, r.failure != replica::errc::ok ? storage_failure(r.failure) : protocol::create_response(r.o, req),
        req.cors);
  });
}

void stream_shard::handle_read(protocol::stream_request req, http::exchange ex, std::uint64_t live_id) {
  std::string path = req.path;
  part_.commit().prepare_read(
      path, now_ms(),
      [this, req = std::move(req), ex, live_id](replica::errc failure, streams::errc code) mutable {
        if (failure != replica::errc::ok) {
          send_response(ex, storage_failure(failure), req.cors);
        } else if (code != streams::errc::ok) {
          send_response(ex, protocol::error_response(protocol::status_for(code)), req.cors);
        } else {
          serve_read(std::move(req), ex, live_id);
        }
      });
}

void stream_shard::serve_read(protocol::stream_request req, http::exchange ex, std::uint64_t live_id) {
  // What a reader may see: only durable data (shard_wal).
  streams::read_result visible = part_.head_visible(req.path);
  if (visible.code != streams::errc::ok) {
    send_response(ex, protocol::error_response(protocol::status_for(visible.code)), req.cors);
    return;
  }
  const streams::stream_meta& meta = *visible.meta;
  using kind = protocol::offset_param::kind;
  kind k = req.offset ? req.offset->k : kind::start;
  streams::stream_offset from = k == kind::now  ? meta.tail
                                : k == kind::at ? req.offset->at
                                                : streams::stream_offset(0);

  if (req.live == protocol::live_mode::sse) {
    (void)start_sse(*this, std::move(req), ex, from, live_id);
    return;
  }
  if (req.live == protocol::live_mode::none && k == kind::now) {
    send_response(ex, protocol::now_response(meta), req.cors);
    return;
  }
  streams::read_result rr = part_.read_planned(req.path, from, opts_.read_chunk_bytes);
  if (tier::hot_tier::has_cold(rr.plan)) {
    // Off the loop (cold_reader); answered when the bytes are back.
    std::string path = req.path;
    const protocol::cors_grant cors = req.cors;
    auto answer = [this, req = std::move(req), ex, live_id](streams::read_result& r, status io) mutable {
      if (r.code != streams::errc::ok || !r.meta) {  // deleted while its cold data was being read
        send_response(ex, protocol::error_response(protocol::status_for(r.code)), req.cors);
        return;
      }
      const streams::stream_meta m = *r.meta;
      answer_read(std::move(req), ex, live_id, m, r, io);
    };
    if (!part_.read_cold(std::move(path), std::move(rr), std::move(answer), true)) {
      // Too many cold reads wait on this core already: the client retries (Retry-After).
      send_response(ex, storage_failure(replica::errc::storage_unavailable), cors);
    }
    return;
  }
  answer_read(std::move(req), ex, live_id, meta, rr, status{});
}

void stream_shard::answer_read(protocol::stream_request req, http::exchange ex, std::uint64_t live_id,
                               const streams::stream_meta& meta, streams::read_result& rr, const status& io) {
  if (!io && rr.plan.bytes == 0) {
    send_response(ex, storage_failure(replica::errc::storage_unavailable), req.cors);
    return;
  }
  if (req.live == protocol::live_mode::none) {
    send_read_response(ex, rr, req, std::nullopt, opts_.read_chunk_bytes);
    return;
  }
  // Long-poll: data at the offset (inherited fork data included) is returned at once (5.7).
  if (rr.plan.bytes > 0) {
    send_read_response(ex, rr, req, cursor(req.cursor), opts_.read_chunk_bytes);
    return;
  }
  if (meta.closed) {
    send_response(ex, protocol::long_poll_empty(meta, rr.plan.next, cursor(req.cursor)), req.cors);
    return;
  }
  (void)start_long_poll(*this, std::move(req), ex, rr.plan.next, live_id);
}

streams::outcome stream_shard::execute(const streams::command& c, replica::shard_wal::completion done) {
  // In a cluster nothing changes here until the command is committed (apply_committed): the outcome is
  // empty and callers wait for `done` instead.
  return part_.commit().submit(c, std::move(done));
}

void stream_shard::effects(const streams::outcome& o, bool releases) {
  if (o.code == streams::errc::ok && o.meta) {
    if (o.created) node_->report_created(*o.meta);
    if (o.appended && !o.created) node_->report_appended(*o.meta);
    if ((o.appended || o.closed_now) && !o.created) wake(o.meta->path, false);
  }
  for (const std::string& path : o.removed) {
    wake(path, true);
    node_->report_deleted(path);
  }
  if (!releases) return;
  for (const streams::fork_release_command& r : o.release) release(r);
}

void stream_shard::release(const streams::fork_release_command& r) {
  // On the source's shard: the source's references are its state (in a cluster, its group's, so that
  // the group's snapshots carry them exactly: docs/replication.md, "Forks").
  stream_shard& s = node_->owner_of(r.source);
  if (&s == this) return propose_release(r);
  s.loop().post([&s, r] { s.propose_release(r); });
}

void stream_shard::propose_release(const streams::fork_release_command& release) {
  if (stopped_) return;
  (void)execute(release, [this, release](replica::durable_result& r) {
    if (r.failure == replica::errc::ok || stopped_) return;
    // No leader took it (nothing was proposed), or, for a release by origin (idempotent: applied twice
    // it changes nothing), its outcome is unknown: again a second later.
    if (r.failure == replica::errc::cluster_unavailable || release.origin) {
      auto id = std::make_shared<io::event_loop::timer_id>(0);
      *id = loop_->add_timer(std::chrono::milliseconds(1000), [this, release, id] {
        release_retries_.erase(*id);
        propose_release(release);
      });
      release_retries_.insert(*id);
      return;
    }
    log::warn(
        "weir: the release of fork source {} (a fork without an origin) failed or may be lost ({}); if it is "
        "lost, the source keeps one reference too many",
        release.source, replica::errc_name(r.failure));
  });
}

void stream_shard::add_reader(const std::string& path, std::shared_ptr<live_reader> r,
                              std::uint64_t live_id) {
  readers_.emplace(path, r);
  if (live_id != 0) by_id_[live_id] = std::move(r);
}

void stream_shard::remove_reader(const std::string& path, const live_reader* r, std::uint64_t live_id) {
  auto [b, e] = readers_.equal_range(path);
  for (auto it = b; it != e; ++it) {
    if (it->second.get() == r) {
      readers_.erase(it);
      break;
    }
  }
  if (live_id != 0) by_id_.erase(live_id);
}

void stream_shard::cancel_live(std::uint64_t live_id) {
  auto it = by_id_.find(live_id);
  if (it == by_id_.end()) return;
  std::shared_ptr<live_reader> r = it->second;
  r->cancel();
}

void stream_shard::wake(const std::string& path, bool removed) {
  auto [b, e] = readers_.equal_range(path);
  if (b == e) return;
  std::vector<std::shared_ptr<live_reader>> woken;
  for (auto it = b; it != e; ++it) woken.push_back(it->second);
  for (auto& r : woken) {
    if (removed) {
      r->gone();
    } else {
      r->wake();
    }
  }
}

void stream_shard::start() {
  sweep_timer_ = loop_->add_timer(std::chrono::milliseconds(250), [this] { sweep(); });
  if (repl_) repl_->core().start();  // the fork sweep
}

void stream_shard::sweep() {
  if (stopped_) return;
  const std::int64_t now = now_ms();
  part_.tick(now);
  for (const std::string& path : sm_.expired(now)) {
    if (!part_.commit().leads(path)) continue;  // in a cluster, the group's leader proposes its expiries
    (void)execute(streams::expire_command{path, now});
  }
  sweep_timer_ = loop_->add_timer(std::chrono::milliseconds(250), [this] { sweep(); });
}

void stream_shard::stop() {
  stopped_ = true;
  if (sweep_timer_ != 0) loop_->cancel_timer(sweep_timer_);
  part_.stop();
  if (admission_timer_ != 0) loop_->cancel_timer(admission_timer_);
  admission_timer_ = 0;
  if (repl_) repl_->core().stop();
  for (io::event_loop::timer_id id : release_retries_) loop_->cancel_timer(id);
  release_retries_.clear();
  std::vector<std::shared_ptr<live_reader>> all;
  for (auto& [path, r] : readers_) all.push_back(r);
  for (auto& r : all) r->stop();
  readers_.clear();
  by_id_.clear();
}

}  // namespace weir::server

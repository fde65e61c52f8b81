#include "replica/checkpointer.h"

#include <chrono>
#include <utility>

#include "base/log.h"
#include "replica/cold_state.h"

namespace weir::replica {

// A cut's encoding, handed from the encoder's thread back to the loop.
struct checkpointer::encoded {
  storage::lsn covered;
  bool local = false;  // written to disk (else only handed to the bucket's waiters)
  std::vector<std::function<void(result<bucket_cut>)>> bucket;
  result<std::vector<std::byte>> blob = std::vector<std::byte>{};
  std::vector<std::uint64_t> referenced;
  double cut_ms = 0;     // on the loop, writes held
  double encode_ms = 0;  // off the loop
};

checkpointer::checkpointer(shard_wal& wal, streams::state_machine& sm, const tier::cold_index& cold,
                           std::uint32_t core, std::uint64_t every_bytes, storage::segment_reader* reader,
                           raft::executor& ex, std::function<void()> resume)
    : wal_(wal),
      sm_(sm),
      cold_(cold),
      core_(core),
      every_bytes_(every_bytes),
      reader_(reader),
      ex_(ex),
      resume_(std::move(resume)) {}

checkpointer::~checkpointer() {
  *alive_ = false;
  if (encoder_.joinable()) encoder_.join();  // its completion, posted or not, finds alive_ false
}

void checkpointer::request() {
  requested_ = true;
  poll();
}

void checkpointer::snapshot_for_bucket(std::function<void(result<bucket_cut>)> fn) {
  bucket_.push_back(std::move(fn));
  poll();
}

void checkpointer::poll() {
  if (waiting_ || encoding_) return;  // the encoder's completion polls again
  if (!wal_.logging() || wal_.failed()) {
    // No cut can be taken: the state machine may be ahead of the log.
    for (auto& fn : std::exchange(bucket_, {})) {
      fn(make_error(storage::errc::io_error, "the core's log failed or is not open"));
    }
    return;
  }
  const bool local = !writing_ && (requested_ || (every_bytes_ != 0 && wal_.logged_bytes() >= every_bytes_));
  if (!local && bucket_.empty()) return;
  if (local) requested_ = false;
  local_ = local;
  waiting_ = true;
  wal_.when_idle([this] { take(); });
}

void checkpointer::take() {
  waiting_ = false;
  if (wal_.failed()) {
    // The state machine is ahead of the log: it must not be snapshotted.
    local_ = false;
    poll();  // fails the bucket's requests
    resume_();
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  encoded e;
  e.covered = wal_.last_lsn();
  e.local = std::exchange(local_, false);
  e.bucket = std::exchange(bucket_, {});
  auto cut = std::make_shared<streams::snapshot_cut>(sm_.cut());
  auto index = std::make_shared<std::vector<std::byte>>(checkpoint_index(cold_));
  if (e.local) wal_.reset_logged_bytes();
  e.cut_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  encoding_ = true;
  resume_();  // the held writes go on while the records are encoded

  if (encoder_.joinable()) encoder_.join();  // finished: its completion ran
  std::weak_ptr<bool> alive = alive_;
  encoder_ = std::thread([this, alive, cut, index, core = core_, e = std::move(e)]() mutable {
    const auto began = std::chrono::steady_clock::now();
    auto sm_blob = cut->encode(core, e.referenced);
    if (sm_blob) {
      e.blob = encode_checkpoint(std::move(*sm_blob), *index);
    } else {
      e.blob = sm_blob.err();
    }
    cut.reset();  // the logs it holds are released here, off the loop
    e.encode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
    ex_.post([this, alive, e = std::move(e)]() mutable {
      auto a = alive.lock();
      if (!a || !*a) return;
      on_encoded(std::move(e));
    });
  });
}

void checkpointer::when_written(std::function<void()> fn) {
  if (settled()) return fn();
  written_.push_back(std::move(fn));
}

void checkpointer::on_encoded(encoded e) {
  encoding_ = false;
  if (!e.blob) {
    // Records left a stream's front during the encode: cut again.
    log::warn("weir serve: core {}: checkpoint at lsn {} not taken ({}); cutting again", core_,
              e.covered.value(), e.blob.err().reason);
    for (auto& fn : e.bucket) bucket_.push_back(std::move(fn));
    requested_ = requested_ || e.local;
    poll();
    return;
  }
  std::vector<std::byte>& blob = *e.blob;
  for (std::size_t i = 0; i < e.bucket.size(); ++i) {
    const bool last = i + 1 == e.bucket.size() && !e.local;
    e.bucket[i](bucket_cut{e.covered, last ? std::move(blob) : blob});
  }
  if (!e.local) {
    poll();
    return;
  }
  std::vector<storage::segment_id> keep;
  keep.reserve(e.referenced.size());
  for (std::uint64_t id : e.referenced) keep.push_back(storage::segment_id{id});
  const std::size_t blob_bytes = blob.size();
  writing_ = true;
  std::weak_ptr<bool> alive = alive_;
  wal_.writer()->checkpoint(e.covered, std::move(blob), std::move(keep),
                            [this, alive, covered = e.covered, blob_bytes, cut_ms = e.cut_ms,
                             encode_ms = e.encode_ms](result<std::vector<storage::segment_id>> r) {
                              auto a = alive.lock();
                              if (!a || !*a) return;
                              writing_ = false;
                              if (!r) {
                                log::warn("weir serve: core {}: checkpoint at lsn {} failed: {}", core_,
                                          covered.value(), r.err().reason);
                                poll();
                                return;
                              }
                              ++taken_;
                              for (storage::segment_id id : *r) {
                                if (reader_) reader_->forget(id);
                              }
                              log::info(
                                  "weir serve: core {}: checkpoint at lsn {} ({} bytes; cut {:.1f} ms on the "
                                  "loop, encoded in {:.1f} "
                                  "ms off it), {} segments reclaimed",
                                  core_, covered.value(), blob_bytes, cut_ms, encode_ms, r->size());
                              poll();
                              if (settled()) {
                                for (auto& fn : std::exchange(written_, {})) fn();
                              }
                            });
  poll();  // a bucket cut asked for meanwhile
}

}  // namespace weir::replica

#include "replica/checkpointer.h"

#include <chrono>
#include <utility>

#include "base/log.h"
#include "replica/cold_state.h"

namespace weir::replica {

checkpointer::checkpointer(shard_wal& wal, streams::state_machine& sm, const tier::cold_index& cold,
                           std::uint32_t core, std::uint64_t every_bytes, storage::segment_reader* reader,
                           std::function<void()> resume)
    : wal_(wal),
      sm_(sm),
      cold_(cold),
      core_(core),
      every_bytes_(every_bytes),
      reader_(reader),
      resume_(std::move(resume)) {}

checkpointer::~checkpointer() {
  *alive_ = false;
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
  if (waiting_) return;
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
  std::vector<std::uint64_t> referenced;
  std::vector<std::byte> blob = encode_checkpoint(sm_.snapshot(core_, referenced), cold_);
  if (!bucket_.empty()) {
    auto waiting = std::exchange(bucket_, {});
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      const bool last = i + 1 == waiting.size() && !local_;
      waiting[i](bucket_cut{wal_.last_lsn(), last ? std::move(blob) : blob});
    }
  }
  if (!local_) {
    resume_();
    return;
  }
  std::vector<storage::segment_id> keep;
  keep.reserve(referenced.size());
  for (std::uint64_t id : referenced) keep.push_back(storage::segment_id{id});
  const storage::lsn covered = wal_.last_lsn();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const std::size_t blob_bytes = blob.size();
  wal_.reset_logged_bytes();
  writing_ = true;
  std::weak_ptr<bool> alive = alive_;
  wal_.writer()->checkpoint(
      covered, std::move(blob), std::move(keep),
      [this, alive, covered, blob_bytes, ms](result<std::vector<storage::segment_id>> r) {
        auto a = alive.lock();
        if (!a || !*a) return;
        writing_ = false;
        if (!r) {
          log::warn("weir serve: core {}: checkpoint at lsn {} failed: {}", core_, covered.value(),
                    r.err().reason);
          return;
        }
        ++taken_;
        for (storage::segment_id id : *r) {
          if (reader_) reader_->forget(id);
        }
        log::info(
            "weir serve: core {}: checkpoint at lsn {} ({} bytes, snapshot {:.1f} ms), {} segments reclaimed",
            core_, covered.value(), blob_bytes, ms, r->size());
      });
  resume_();
}

}  // namespace weir::replica

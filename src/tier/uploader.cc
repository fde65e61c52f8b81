#include "tier/uploader.h"

#include <algorithm>
#include <utility>

#include "base/assert.h"
#include "base/log.h"
#include "storage/log_format.h"

namespace weir::tier {

static_assert(uploader::max_whole_bytes >= storage::format::max_record_payload,
              "a record of a JSON stream must fit one object whole");

uploader::uploader(raft::executor& ex, uploader_options o, put_fn put, uploaded_fn uploaded)
    : ex_(ex),
      o_(o),
      put_(std::move(put)),
      uploaded_(std::move(uploaded)),
      next_seq_(o.first_seq),
      alive_(std::make_shared<bool>(true)) {
  WEIR_ASSERT(o_.target_object_bytes > 0 && o_.target_object_bytes <= object_store::max_object_bytes / 2,
              "target object size {} out of range", o_.target_object_bytes);
}

uploader::~uploader() {
  stop();
}

void uploader::add(std::string_view stream, streams::stream_offset first, streams::stream_offset end,
                   std::span<const std::byte> bytes, bool whole, std::span<const object_record> records) {
  if (stopped_ || bytes.empty()) return;
  WEIR_ASSERT(end.value() - first.value() == bytes.size(), "range [{}, {}) with {} bytes", first.value(),
              end.value(), bytes.size());
  bytes_waiting_ += bytes.size();
  whole = whole && bytes.size() <= max_whole_bytes;
  if (whole && filling_ && filling_->data_size() > 0 &&
      filling_->data_size() + filling_->table_size() + bytes.size() > o_.target_object_bytes) {
    seal(true);  // the range goes whole into the next object
  }
  // A range larger than what is left of the object is cut at the object's end (offsets count bytes), so
  // that every object stays near the target and far under the store's largest PUT.
  while (!bytes.empty()) {
    if (!filling_) {
      // Room for a full object (pages are touched only as bytes come): it never grows by copying, but
      // for a range kept whole beyond the target.
      filling_.emplace(o_.group, o_.block_size,
                       object_header_size + stored_data_size(o_.target_object_bytes, o_.block_size) +
                           object_trailer_size + 4096,
                       std::exchange(spare_, object_bytes{}));
      age_timer_ = ex_.add_timer(o_.max_age, [this] {
        age_timer_ = 0;
        seal(false);
      });
    }
    // The record table counts toward the target: an object of many tiny records stays near its size.
    const std::uint64_t filled = filling_->data_size() + filling_->table_size();
    const std::uint64_t room =
        whole ? bytes.size() : o_.target_object_bytes - std::min(o_.target_object_bytes, filled);
    // At least one byte per pass, so that a full table cannot stall the loop below.
    const std::size_t n = static_cast<std::size_t>(std::clamp<std::uint64_t>(room, 1, bytes.size()));
    const streams::stream_offset cut(first.value() + n);
    const std::size_t in_part = records_before(records, cut);
    filling_->add(stream, first, cut, bytes.first(n), records.first(in_part));
    records = records.subspan(in_part);
    bytes = bytes.subspan(n);
    first = cut;
    if (filling_->data_size() + filling_->table_size() >= o_.target_object_bytes) seal(true);
  }
}

void uploader::flush() {
  if (stopped_) return;
  seal(false);
  spare_ = object_bytes{};
}

void uploader::stop() {
  if (stopped_) return;
  stopped_ = true;
  *alive_ = false;
  if (age_timer_ != 0) ex_.cancel_timer(age_timer_);
  age_timer_ = 0;
  for (auto& [seq, p] : pending_)
    if (p.retry_timer != 0) ex_.cancel_timer(p.retry_timer);
  pending_.clear();
  filling_.reset();
  spare_ = object_bytes{};
  bytes_waiting_ = 0;
}

void uploader::seal(bool full) {
  if (!filling_ || filling_->ranges().empty()) return;
  if (age_timer_ != 0) ex_.cancel_timer(age_timer_);
  age_timer_ = 0;
  const std::uint64_t seq = next_seq_.value();
  next_seq_ = upload_seq(seq + 1);
  pending p;
  p.object.name = object_name{o_.epoch, o_.group, o_.term, upload_seq(seq)};
  p.object.key = object_key(p.object.name);
  p.object.ranges = filling_->ranges();
  p.data_bytes = filling_->data_size();
  p.bytes = std::make_shared<object_bytes>(filling_->finish());
  p.object.size = p.bytes->size();
  p.next_delay = o_.retry_base;
  p.recycle = full;
  filling_.reset();
  pending_.emplace(seq, std::move(p));
  send(seq);
}

void uploader::send(std::uint64_t seq) {
  pending& p = pending_.at(seq);
  p.retry_timer = 0;
  // The bytes are kept until the store has them: a retry sends exactly these under the same key.
  put_(p.object.key, p.bytes, [this, seq, alive = alive_](store_result<object_info> r) {
    if (*alive) on_put(seq, std::move(r));
  });
}

void uploader::on_put(std::uint64_t seq, store_result<object_info> r) {
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  pending& p = it->second;
  if (!r) {
    // However the attempt failed: an ambiguous one may have landed (then the retry rewrites the same
    // bytes), a refused one (credentials, a missing bucket) may be cured by the operator.
    retry_later(seq, r.err().describe());
    return;
  }
  if (r->size != 0 && r->size != p.object.size) {
    // A store that kept other bytes under our key: never treat as uploaded.
    retry_later(seq, "the store reports " + std::to_string(r->size) + " bytes, sent " +
                         std::to_string(p.object.size));
    return;
  }
  p.landed = true;
  // The store has them. The buffer is reused only when no one else holds it any more (a put's worker
  // lets go of it before it reports).
  if (p.recycle && spare_.capacity() == 0 && p.bytes.use_count() == 1) spare_ = std::move(*p.bytes);
  p.bytes.reset();
  last_error_.clear();
  report_landed();
}

void uploader::retry_later(std::uint64_t seq, const std::string& why) {
  // The same key and bytes, after a backoff that doubles up to retry_max. Appends go on meanwhile; the
  // caller's budget bounds the bytes waiting.
  pending& p = pending_.at(seq);
  ++attempts_failed_;
  last_error_ = p.object.key + ": " + why;
  log::warn("cold tier: group {}: upload of {} failed ({}); retrying in {} ms", o_.group.value(),
            p.object.key, why, p.next_delay.count());
  p.retry_timer = ex_.add_timer(p.next_delay, [this, seq] { send(seq); });
  p.next_delay = std::min(o_.retry_max, p.next_delay * 2);
}

void uploader::report_landed() {
  // In sequence order: an object is reported only once every one before it was.
  while (!pending_.empty() && pending_.begin()->second.landed) {
    auto node = pending_.extract(pending_.begin());
    pending& p = node.mapped();
    bytes_waiting_ -= std::min(bytes_waiting_, p.data_bytes);
    uploaded_(p.object);
    if (stopped_) return;  // the report may stop the uploader (the caller lost leadership)
  }
}

}  // namespace weir::tier

#include "bench/delivery_tracker.h"

#include "base/assert.h"

namespace weir::bench {

delivery_tracker::delivery_tracker(std::size_t readers, std::size_t events)
    : events_(events), seen_(readers, std::vector<bool>(events, false)), got_(readers, 0) {}

delivery_tracker::verdict delivery_tracker::record(std::size_t reader, std::size_t index) {
  WEIR_ASSERT(reader < seen_.size(), "reader {} of {}", reader, seen_.size());
  if (index >= events_) {
    ++out_of_range_;
    return verdict::out_of_range;
  }
  auto&& bit = seen_[reader][index];
  if (bit) {
    ++duplicated_;
    return verdict::duplicate;
  }
  bit = true;
  ++got_[reader];
  ++delivered_;
  return verdict::fresh;
}

std::uint64_t delivery_tracker::lost_of_sent(std::size_t reader, std::size_t sent) const {
  WEIR_ASSERT(reader < seen_.size(), "reader {} of {}", reader, seen_.size());
  std::uint64_t n = 0;
  for (std::size_t k = 0; k < sent && k < events_; ++k) n += seen_[reader][k] ? 0 : 1;
  return n;
}

}  // namespace weir::bench

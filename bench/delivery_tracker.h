// delivery_tracker: which of `events` tagged events each of `readers` subscribers has seen, so that an
// event delivered twice (duplicated) or never (lost) is counted, not hidden. Pure bookkeeping, no I/O;
// owned by one workload on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weir::bench {

class delivery_tracker {
 public:
  enum class verdict : std::uint8_t { fresh, duplicate, out_of_range };

  delivery_tracker(std::size_t readers, std::size_t events);

  // Reader `reader` received event `index`.
  verdict record(std::size_t reader, std::size_t index);

  std::size_t readers() const { return got_.size(); }
  std::size_t events() const { return events_; }
  std::uint64_t received(std::size_t reader) const { return got_[reader]; }
  bool complete(std::size_t reader) const { return got_[reader] == events_; }
  std::uint64_t expected() const { return static_cast<std::uint64_t>(got_.size()) * events_; }
  std::uint64_t delivered() const { return delivered_; }
  std::uint64_t duplicated() const { return duplicated_; }
  std::uint64_t out_of_range() const { return out_of_range_; }
  // Events some reader never saw: expected - delivered.
  std::uint64_t lost() const { return expected() - delivered_; }
  // Events of the first `sent` that reader `reader` has not seen (the tail not sent yet is not lost).
  std::uint64_t lost_of_sent(std::size_t reader, std::size_t sent) const;

 private:
  std::size_t events_;
  std::vector<std::vector<bool>> seen_;
  std::vector<std::uint64_t> got_;
  std::uint64_t delivered_ = 0;
  std::uint64_t duplicated_ = 0;
  std::uint64_t out_of_range_ = 0;
};

}  // namespace weir::bench

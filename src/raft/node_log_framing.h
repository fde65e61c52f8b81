// node_log_framing: how a storage::segment_reader reads records of a raft node log, so that a stream
// record's place may point into the node log's segments (docs/replication.md, "Stream data on a cluster
// node"). Records are `u32 body length | u32 crc32c(body) | body` (log_record.h); a place's payload is
// the body, and its data offset counts from the body's first byte (node_log::entry_place). Segment `n` is
// the file `<base>.NNNNNNNN`, or `<base>.kept.NNNNNNNN` once compaction kept it for the data it holds.
#pragma once

#include <string>

#include "storage/segment_reader.h"

namespace weir::raft {

class node_log_framing final : public storage::record_framing {
 public:
  // `base`: the node log's file name without its directory ("node.log").
  explicit node_log_framing(std::string base) : base_(std::move(base)) {}

  std::string file_name(storage::segment_id id, bool alternate) const override;
  std::size_t header_size() const override;
  std::optional<std::uint32_t> payload_length(std::span<const std::byte> header) const override;
  bool intact(std::span<const std::byte> record) const override;

 private:
  std::string base_;
};

}  // namespace weir::raft

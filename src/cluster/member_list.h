// The binary form of a member list, shared by the membership message (messages.h) and group 0's
// membership entries and snapshots (membership_codec.cc): u64 epoch, u16 count, then per member u64 id,
// u16 length, address; ids increasing from 1, addresses not empty (the one encoding of a list, so
// decoding is canonical). docs/replication-formats.md, "Cluster messages".
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "raft/byte_codec.h"

namespace weir::cluster {

void write_member_list(raft::byte_writer& w, std::uint64_t epoch,
                       const std::map<std::uint64_t, std::string>& members);
// nullptr when a whole, well-formed list was read; otherwise what is wrong with it.
const char* read_member_list(raft::byte_reader& r, std::uint64_t& epoch,
                             std::map<std::uint64_t, std::string>& members);

}  // namespace weir::cluster

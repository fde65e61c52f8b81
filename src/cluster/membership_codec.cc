// The binary forms of cluster/membership.h: a membership change as group 0's log carries it, and what
// group 0 decided (the membership and the nodes removed) as its snapshot does
// (docs/replication-formats.md, "Cluster messages"; docs/replication.md, "Snapshots"). Apart from
// membership.cc (which reads files and addresses) so that the fuzz target links the codec alone.
#include "cluster/membership.h"

#include <cstdint>
#include <optional>

#include "base/assert.h"
#include "cluster/member_list.h"
#include "raft/byte_codec.h"

namespace weir::cluster {

void write_member_list(raft::byte_writer& w, std::uint64_t epoch,
                       const std::map<std::uint64_t, std::string>& members) {
  WEIR_ASSERT(members.size() <= UINT16_MAX, "a membership of {} nodes", members.size());
  w.u64(epoch);
  w.u16(static_cast<std::uint16_t>(members.size()));
  for (const auto& [id, address] : members) {
    WEIR_ASSERT(address.size() <= UINT16_MAX, "node {}: an address of {} bytes", id, address.size());
    w.u64(id);
    w.u16(static_cast<std::uint16_t>(address.size()));
    w.text(address);
  }
}

const char* read_member_list(raft::byte_reader& r, std::uint64_t& epoch,
                             std::map<std::uint64_t, std::string>& members) {
  std::uint16_t count = 0;
  if (!r.u64(epoch) || !r.u16(count)) return "short membership";
  std::uint64_t previous = 0;
  for (std::uint16_t i = 0; i < count; ++i) {
    std::uint64_t id = 0;
    std::uint16_t len = 0;
    std::span<const std::byte> address;
    if (!r.u64(id) || !r.u16(len) || !r.bytes(len, address)) return "short membership";
    if (id <= previous) return "member ids not increasing from 1";
    if (len == 0) return "a member without an address";
    previous = id;
    members.emplace(id, std::string(reinterpret_cast<const char*>(address.data()), address.size()));
  }
  return nullptr;
}

namespace {

error malformed(const char* what) {
  return make_error(membership_errc::corrupt, std::string("membership entry: ") + what);
}

void write_members(raft::byte_writer& w, const membership& m) {
  write_member_list(w, m.epoch, m.members);
}

std::optional<error> read_members(raft::byte_reader& r, membership& m) {
  if (const char* why = read_member_list(r, m.epoch, m.members)) return malformed(why);
  return std::nullopt;
}

bool fits(const membership& m) {
  if (m.members.size() > UINT16_MAX) return false;
  for (const auto& [id, address] : m.members)
    if (address.size() > UINT16_MAX) return false;
  return true;
}

}  // namespace

std::vector<std::byte> encode_membership_change(const membership_change& c) {
  WEIR_ASSERT(fits(c.base) && c.address.size() <= UINT16_MAX, "a membership change too large to encode");
  std::vector<std::byte> out;
  raft::byte_writer w(out);
  w.u8(static_cast<std::uint8_t>(c.what));
  w.u64(c.id);
  w.u16(static_cast<std::uint16_t>(c.address.size()));
  w.text(c.address);
  write_members(w, c.base);
  return out;
}

result<membership_change> decode_membership_change(std::span<const std::byte> bytes) {
  raft::byte_reader r(bytes);
  membership_change c;
  std::uint8_t what = 0;
  std::uint16_t len = 0;
  std::span<const std::byte> address;
  if (!r.u8(what) || !r.u64(c.id) || !r.u16(len) || !r.bytes(len, address)) return malformed("short change");
  if (what != static_cast<std::uint8_t>(membership_change::op::add) &&
      what != static_cast<std::uint8_t>(membership_change::op::remove)) {
    return malformed("unknown change");
  }
  c.what = static_cast<membership_change::op>(what);
  if (c.id == 0) return malformed("node id 0");
  if ((c.what == membership_change::op::add) != (len != 0))
    return malformed(len == 0 ? "an addition without an address" : "a removal with an address");
  c.address.assign(reinterpret_cast<const char*>(address.data()), address.size());
  if (auto e = read_members(r, c.base)) return *e;
  if (r.remaining() != 0) return malformed("trailing bytes");
  return c;
}

std::vector<std::byte> encode_membership(const membership& m) {
  WEIR_ASSERT(fits(m), "a membership too large to encode");
  std::vector<std::byte> out;
  raft::byte_writer w(out);
  write_members(w, m);
  return out;
}

result<membership> decode_membership(std::span<const std::byte> bytes) {
  raft::byte_reader r(bytes);
  membership m;
  if (auto e = read_members(r, m)) return *e;
  if (r.remaining() != 0) return malformed("trailing bytes");
  return m;
}

std::vector<std::byte> encode_decided(const decided_membership& d) {
  std::vector<std::byte> out = encode_membership(d.committed);
  if (d.departed.empty()) return out;
  WEIR_ASSERT(d.departed.size() <= UINT16_MAX, "{} departures", d.departed.size());
  raft::byte_writer w(out);
  w.u16(static_cast<std::uint16_t>(d.departed.size()));
  for (const auto& [id, dep] : d.departed) {
    WEIR_ASSERT(dep.address.size() <= UINT16_MAX, "node {}: an address of {} bytes", id, dep.address.size());
    w.u64(id);
    w.u64(dep.epoch);
    w.u16(static_cast<std::uint16_t>(dep.address.size()));
    w.text(dep.address);
  }
  return out;
}

result<decided_membership> decode_decided(std::span<const std::byte> bytes) {
  raft::byte_reader r(bytes);
  decided_membership d;
  if (auto e = read_members(r, d.committed)) return *e;
  if (r.remaining() == 0) return d;
  std::uint16_t count = 0;
  if (!r.u16(count)) return malformed("short departures");
  if (count == 0) return malformed("an empty list of departures");  // written as no list at all
  std::uint64_t previous = 0;
  for (std::uint16_t i = 0; i < count; ++i) {
    std::uint64_t id = 0;
    departure dep;
    std::uint16_t len = 0;
    std::span<const std::byte> address;
    if (!r.u64(id) || !r.u64(dep.epoch) || !r.u16(len) || !r.bytes(len, address))
      return malformed("short departures");
    if (id <= previous) return malformed("departed ids not increasing from 1");
    if (len == 0) return malformed("a departure without an address");
    previous = id;
    dep.address.assign(reinterpret_cast<const char*>(address.data()), address.size());
    d.departed.emplace(id, std::move(dep));
  }
  if (r.remaining() != 0) return malformed("trailing bytes");
  return d;
}

}  // namespace weir::cluster

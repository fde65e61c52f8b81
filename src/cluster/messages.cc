#include "cluster/messages.h"

#include <type_traits>

#include "base/assert.h"
#include "cluster/member_list.h"
#include "raft/byte_codec.h"

namespace weir::cluster {
namespace {

enum class kind : std::uint8_t {
  forward = 1,
  forward_reject = 2,
  read_request = 3,
  read_reply = 4,
  membership_update = 5,
  leader_call = 6,
  leader_reply = 7,
  leading = 8,
};

error malformed(const char* what) {
  return error{1, std::string("cluster message: ") + what};
}

}  // namespace

std::vector<std::byte> encode_entry(entry_header h, std::span<const std::byte> command) {
  std::vector<std::byte> out;
  out.reserve(entry_header_size + command.size());
  raft::byte_writer w(out);
  w.u64(h.origin);
  w.u64(h.ticket);
  w.u8(static_cast<std::uint8_t>(h.kind));
  w.bytes(command);
  return out;
}

result<std::pair<entry_header, std::span<const std::byte>>> decode_entry(std::span<const std::byte> entry) {
  raft::byte_reader r(entry);
  entry_header h;
  std::uint8_t what = 0;
  if (!r.u64(h.origin) || !r.u64(h.ticket) || !r.u8(what)) return malformed("entry shorter than its header");
  // Only kinds this node knows: an unknown one is malformed (and skipped alike on every node).
  if (what != static_cast<std::uint8_t>(entry_kind::streams) &&
      what != static_cast<std::uint8_t>(entry_kind::subscriptions) &&
      what != static_cast<std::uint8_t>(entry_kind::membership) &&
      what != static_cast<std::uint8_t>(entry_kind::cold_index)) {
    return malformed("unknown entry kind");
  }
  h.kind = static_cast<entry_kind>(what);
  return std::pair{h, entry.subspan(entry_header_size)};
}

std::vector<std::byte> encode(const message& m) {
  std::vector<std::byte> out;
  raft::byte_writer w(out);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, forward>) {
          w.u8(static_cast<std::uint8_t>(kind::forward));
          w.u32(v.group);
          w.bytes(v.entry);
        } else if constexpr (std::is_same_v<T, forward_reject>) {
          w.u8(static_cast<std::uint8_t>(kind::forward_reject));
          w.u64(v.ticket);
          w.u8(static_cast<std::uint8_t>(v.reason));
          w.u64(v.leader);
        } else if constexpr (std::is_same_v<T, read_request>) {
          w.u8(static_cast<std::uint8_t>(kind::read_request));
          w.u32(v.group);
          w.u64(v.id);
        } else if constexpr (std::is_same_v<T, read_reply>) {
          w.u8(static_cast<std::uint8_t>(kind::read_reply));
          w.u64(v.id);
          w.u8(v.ok ? 1 : 0);
          w.u64(v.index);
          w.u64(v.leader);
        } else if constexpr (std::is_same_v<T, leader_call>) {
          w.u8(static_cast<std::uint8_t>(kind::leader_call));
          w.u64(v.id);
          w.u32(v.group);
          w.bytes(v.request);
        } else if constexpr (std::is_same_v<T, leader_reply>) {
          WEIR_ASSERT(v.served || v.answer.empty(), "a leader_reply not served carries {} bytes",
                      v.answer.size());
          w.u8(static_cast<std::uint8_t>(kind::leader_reply));
          w.u64(v.id);
          w.u8(v.served ? 1 : 0);
          w.u64(v.leader);
          w.bytes(v.answer);
        } else if constexpr (std::is_same_v<T, leading>) {
          w.u8(static_cast<std::uint8_t>(kind::leading));
          w.u32(static_cast<std::uint32_t>(v.groups.size()));
          for (const auto& [group, term] : v.groups) {
            w.u32(group);
            w.u64(term);
          }
        } else {
          static_assert(std::is_same_v<T, membership_update>);
          w.u8(static_cast<std::uint8_t>(kind::membership_update));
          write_member_list(w, v.epoch, v.members);
        }
      },
      m);
  return out;
}

result<message> decode(std::span<const std::byte> bytes) {
  raft::byte_reader r(bytes);
  std::uint8_t k = 0;
  if (!r.u8(k)) return malformed("empty");
  auto done = [&](message m) -> result<message> {
    if (r.remaining() != 0) return malformed("trailing bytes");
    return m;
  };
  switch (static_cast<kind>(k)) {
    case kind::forward: {
      forward f;
      if (!r.u32(f.group)) return malformed("short forward");
      std::span<const std::byte> rest;
      (void)r.bytes(r.remaining(), rest);
      if (rest.size() < entry_header_size) return malformed("forward without an entry header");
      f.entry = rest;
      return message(f);
    }
    case kind::forward_reject: {
      forward_reject f;
      std::uint8_t reason = 0;
      if (!r.u64(f.ticket) || !r.u8(reason) || !r.u64(f.leader)) return malformed("short forward_reject");
      if (reason != 1 && reason != 2) return malformed("bad reject reason");
      f.reason = static_cast<reject_reason>(reason);
      return done(f);
    }
    case kind::read_request: {
      read_request q;
      if (!r.u32(q.group) || !r.u64(q.id)) return malformed("short read_request");
      return done(q);
    }
    case kind::read_reply: {
      read_reply q;
      std::uint8_t ok = 0;
      if (!r.u64(q.id) || !r.u8(ok) || !r.u64(q.index) || !r.u64(q.leader))
        return malformed("short read_reply");
      if (ok > 1) return malformed("bad flag");
      q.ok = ok == 1;
      return done(q);
    }
    case kind::membership_update: {
      membership_update u;
      if (const char* why = read_member_list(r, u.epoch, u.members)) return malformed(why);
      return done(std::move(u));
    }
    case kind::leader_call: {
      leader_call c;
      if (!r.u64(c.id) || !r.u32(c.group)) return malformed("short leader_call");
      (void)r.bytes(r.remaining(), c.request);
      return message(c);
    }
    case kind::leader_reply: {
      leader_reply q;
      std::uint8_t served = 0;
      if (!r.u64(q.id) || !r.u8(served) || !r.u64(q.leader)) return malformed("short leader_reply");
      if (served > 1) return malformed("bad flag");
      q.served = served == 1;
      (void)r.bytes(r.remaining(), q.answer);
      if (!q.served && !q.answer.empty()) return malformed("an answer from a node that did not serve");
      return message(q);
    }
    case kind::leading: {
      leading l;
      std::uint32_t n = 0;
      if (!r.u32(n)) return malformed("short leading");
      if (n > r.remaining() / 12) return malformed("leading: more groups than bytes");
      l.groups.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t group = 0;
        std::uint64_t term = 0;
        if (!r.u32(group) || !r.u64(term)) return malformed("short leading");
        l.groups.emplace_back(group, term);
      }
      return done(std::move(l));
    }
  }
  return malformed("unknown kind");
}

}  // namespace weir::cluster

#include "cluster/membership.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <span>

#include "cluster/cluster_options.h"
#include "cluster/key_value_text.h"

namespace weir::cluster {
namespace {

error invalid(std::string reason) {
  return make_error(membership_errc::invalid, std::move(reason));
}

error corrupt(std::string reason) {
  return make_error(membership_errc::corrupt, std::move(reason));
}

error io(const std::string& path, const error& e) {
  return make_error(membership_errc::io_error, "members file " + path + ": " + e.reason);
}

std::string id_list(const membership& m) {
  std::string out;
  for (const auto& [id, a] : m.members) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out.empty() ? "none" : out;
}

// "HOST:PORT" as every node writes it (IPv4 or localhost: io::connect_tcp takes no names yet).
result<std::string> normal_address(std::string_view address) {
  auto a = parse_peer_address(address);
  if (!a || a->empty()) {
    return invalid("address: expected HOST:PORT, got '" + std::string(address) + "'" +
                   (a ? "" : " (" + a.err().reason + ")"));
  }
  if (a->port == 0) return invalid("address: port 0");
  in_addr ip{};
  if (a->host != "localhost" && ::inet_pton(AF_INET, a->host.c_str(), &ip) != 1) {
    return invalid("address: an IPv4 address or localhost (names and IPv6 are not supported yet), got '" +
                   a->host + "'");
  }
  return format_peer_address(*a);
}

}  // namespace

bool supersedes(const membership& a, const membership& b) {
  if (a.epoch != b.epoch) return a.epoch > b.epoch;
  return a.members > b.members;
}

result<membership> with_member(const membership& base, std::uint64_t id, std::string_view address) {
  if (id == 0) return invalid("id: node ids start at 1");
  auto checked = normal_address(address);
  if (!checked) return checked.err();
  const std::string& normal = *checked;
  for (const auto& [other, other_address] : base.members) {
    if (other == id && other_address != normal) {
      return invalid("node " + std::to_string(id) + " is a member at " + other_address +
                     "; remove it first to move it to " + normal);
    }
    if (other != id && other_address == normal) {
      return invalid("address " + normal + " is node " + std::to_string(other) + "'s");
    }
  }
  membership next = base;
  next.epoch = base.epoch + 1;
  next.members[id] = normal;
  if (next.members.size() > max_nodes) {
    return invalid("a cluster has at most " + std::to_string(max_nodes) +
                   " nodes (members: " + id_list(base) + ")");
  }
  return next;
}

result<membership> without_member(const membership& base, std::uint64_t id) {
  if (!base.members.contains(id)) {
    return invalid("node " + std::to_string(id) + " is not a member (members: " + id_list(base) + ")");
  }
  if (base.members.size() == 1) return invalid("node " + std::to_string(id) + " is the last member");
  membership next = base;
  next.epoch = base.epoch + 1;
  next.members.erase(id);
  return next;
}

status check_membership(const membership& m) {
  if (m.epoch != 0 && m.members.empty())
    return invalid("epoch " + std::to_string(m.epoch) + " without members");
  if (m.members.size() > max_nodes) return invalid(std::to_string(m.members.size()) + " members");
  std::map<std::string, std::uint64_t> owner;
  for (const auto& [id, address] : m.members) {
    if (id == 0) return invalid("node id 0");
    auto normal = normal_address(address);
    if (!normal) return invalid("node " + std::to_string(id) + ": " + normal.err().reason);
    if (*normal != address)
      return invalid("node " + std::to_string(id) + ": '" + address + "' is not as written");
    if (auto [it, fresh] = owner.emplace(address, id); !fresh) {
      return invalid("node " + std::to_string(id) + ": the address of node " + std::to_string(it->second) +
                     " too");
    }
  }
  return {};
}

result<membership> apply_change(const std::optional<membership>& committed, const membership_change& c) {
  if (committed && c.base != *committed) {
    std::string why = c.base.epoch == committed->epoch
                          ? "another membership of epoch " + std::to_string(c.base.epoch)
                          : "epoch " + std::to_string(c.base.epoch);
    return make_error(membership_errc::stale,
                      "the membership changed while this change was on its way (it was made against " + why +
                          ", the cluster decided epoch " + std::to_string(committed->epoch) +
                          " first): check GET /cluster/members and send it again if it still applies");
  }
  // Nothing decided through raft yet: the proposer's view (the bootstrap configuration, or a membership
  // an older version spread by messages) is the starting point, the same on every node that applies it.
  if (!committed) {
    if (c.base.members.empty()) return invalid("no membership to change (the proposing node knew none)");
    if (auto st = check_membership(c.base); !st) return invalid("the change's base: " + st.err().reason);
  }
  const membership& current = committed ? *committed : c.base;
  return c.what == membership_change::op::add ? with_member(current, c.id, c.address)
                                              : without_member(current, c.id);
}

void note_departures(const membership& before, const membership& after, departures& d) {
  for (const auto& [id, address] : after.members) d.erase(id);
  for (const auto& [id, address] : before.members)
    if (!after.members.contains(id)) d[id] = departure{after.epoch, address};
  while (d.size() > max_departures) {
    auto oldest = std::min_element(
        d.begin(), d.end(), [](const auto& a, const auto& b) { return a.second.epoch < b.second.epoch; });
    d.erase(oldest);
  }
}

std::string format_membership(const membership& m) {
  std::string out =
      "# weir: the membership this cluster was asked to have (docs/operations.md, \"Cluster\")\n"
      "epoch = " +
      std::to_string(m.epoch) + "\nmembers = ";
  bool first = true;
  for (const auto& [id, address] : m.members) {
    out += (first ? "" : ",") + std::to_string(id) + "=" + address;
    first = false;
  }
  return out + "\n";
}

result<membership> parse_membership(std::string_view text) {
  membership m;
  bool has_epoch = false;
  bool has_members = false;
  auto failed = for_each_key_value(
      text,
      [&](std::string_view key, std::string_view value, std::string_view line) -> std::optional<std::string> {
        if (key == "epoch" && !has_epoch) {
          auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), m.epoch);
          if (value.empty() || ec != std::errc{} || end != value.data() + value.size()) {
            return "'" + std::string(line) + "': the epoch is not a whole number";
          }
          has_epoch = true;
        } else if (key == "members" && !has_members) {
          auto peers = parse_peers(value);
          if (!peers) return "members: " + peers.err().reason;
          for (const auto& [id, a] : *peers) m.members.emplace(id, format_peer_address(a));
          has_members = true;
        } else {
          return "unknown or repeated key '" + std::string(key) + "'";
        }
        return std::nullopt;
      });
  if (failed) return corrupt(std::move(*failed));
  if (!has_epoch || !has_members) return corrupt(has_epoch ? "members missing" : "epoch missing");
  if (auto st = check_membership(m); !st) return corrupt(st.err().reason);
  return m;
}

result<std::optional<membership>> load_membership(storage::env& e, const std::string& path) {
  if (!e.file_exists(path)) return std::optional<membership>();
  auto bytes = storage::read_whole_file(e, path);
  if (!bytes) return io(path, bytes.err());
  auto m = parse_membership(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!m) return corrupt("members file " + path + ": " + m.err().reason);
  return std::optional<membership>(std::move(*m));
}

// storage::replace_file: after a crash the file is the old one or the new one.
status store_membership(storage::env& e, const std::string& path, const membership& m) {
  const std::string text = format_membership(m);
  if (auto st = storage::replace_file(e, path, std::as_bytes(std::span(text.data(), text.size()))); !st)
    return io(path, st.err());
  return {};
}

}  // namespace weir::cluster

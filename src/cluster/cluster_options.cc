#include "cluster/cluster_options.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <system_error>

#include "io/socket.h"

namespace weir::cluster {
namespace {

error invalid(std::string reason) {
  return make_error(std::errc::invalid_argument, std::move(reason));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// io::connect_tcp and io::listen_tcp take IPv4 addresses (and localhost) only (io/socket.cc); a name
// would fail only later, on every connection attempt, so say so at start.
bool ipv4_or_localhost(const std::string& host) {
  in_addr a{};
  return host == "localhost" || ::inet_pton(AF_INET, host.c_str(), &a) == 1;
}

std::string id_list(const std::map<std::uint64_t, peer_address>& peers) {
  std::string out;
  for (const auto& [id, a] : peers) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

result<peer_address> parse_peer_address(std::string_view text) {
  text = trim(text);
  if (text.empty()) return peer_address{};
  auto hp = io::parse_host_port(text);
  if (!hp) return invalid(hp.err().reason);
  for (char ch : hp->host) {
    if (ch == ' ' || ch == '\t' || ch == ',' || ch == '=') {
      return invalid("expected HOST:PORT, got '" + std::string(text) + "'");
    }
  }
  return peer_address{std::move(hp->host), hp->port};
}

result<std::map<std::uint64_t, peer_address>> parse_peers(std::string_view text) {
  std::map<std::uint64_t, peer_address> peers;
  if (trim(text).empty()) return peers;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    if (entry.empty()) return invalid("an empty entry (expected ID=HOST:PORT,ID=HOST:PORT,...)");
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return invalid("'" + std::string(entry) + "' is not ID=HOST:PORT");
    }
    const std::string_view id_text = trim(entry.substr(0, eq));
    std::uint64_t id = 0;
    auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (id_text.empty() || ec != std::errc{} || end != id_text.data() + id_text.size() || id == 0) {
      return invalid("bad node id '" + std::string(id_text) + "' in '" + std::string(entry) +
                     "' (a whole number from 1)");
    }
    auto addr = parse_peer_address(entry.substr(eq + 1));
    if (!addr) return invalid("node " + std::to_string(id) + ": " + addr.err().reason);
    if (addr->empty()) return invalid("node " + std::to_string(id) + ": no HOST:PORT after '='");
    if (!peers.emplace(id, std::move(*addr)).second) {
      return invalid("node " + std::to_string(id) + " is listed twice");
    }
    if (comma == std::string_view::npos) return peers;
    text.remove_prefix(comma + 1);
  }
}

std::string format_peer_address(const peer_address& a) {
  if (a.empty()) return "";
  return a.host + ":" + std::to_string(a.port);
}

std::string format_peers(const std::map<std::uint64_t, peer_address>& peers) {
  std::string out;
  for (const auto& [id, a] : peers) {
    out += (out.empty() ? "" : ",") + std::to_string(id) + "=" + format_peer_address(a);
  }
  return out;
}

// peer-tls-cert, -key and -ca go together: a node with only some of them would dial in plain TCP (or
// fail every handshake) while its operator believes the links encrypted.
static status validate_peer_tls(const cluster_options& o) {
  const bool cert = !o.peer_tls_cert.empty(), key = !o.peer_tls_key.empty(), ca = !o.peer_tls_ca.empty();
  if (cert == key && key == ca) return {};
  std::string missing;
  for (auto [set, name] : {std::pair{cert, "peer-tls-cert"}, {key, "peer-tls-key"}, {ca, "peer-tls-ca"}}) {
    if (!set) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  return invalid(
      "peer-tls-cert, peer-tls-key and peer-tls-ca go together (mutual TLS on the peer links); "
      "missing: " +
      missing);
}

status validate(const cluster_options& o) {
  if (!o.enabled()) {
    if (o.join) return invalid("join: set without node-id; a node joins a cluster as --node-id N");
    if (!o.peer_tls_cert.empty() || !o.peer_tls_key.empty() || !o.peer_tls_ca.empty()) {
      return invalid(
          "peer-tls-cert, peer-tls-key, peer-tls-ca: set without node-id (they secure the links "
          "between the nodes of a cluster)");
    }
    if (o.peers.empty() && o.peer_listen.empty()) return {};
    const char* what = o.peers.empty() ? "peer-listen" : "peers";
    return invalid(std::string(what) +
                   ": set without node-id; add --node-id N (this node's id in peers) to run as a node of a "
                   "cluster, or leave peers and peer-listen empty to run alone");
  }
  if (o.peers.empty()) return invalid("peers: required with node-id");
  if (o.peers.size() > max_nodes) {
    return invalid("peers: at most " + std::to_string(max_nodes) + " nodes, got " +
                   std::to_string(o.peers.size()));
  }
  if (!o.peers.contains(o.node_id)) {
    return invalid("node-id " + std::to_string(o.node_id) + " is not one of the peers (" + id_list(o.peers) +
                   ")");
  }
  if (o.peer_listen.empty()) return invalid("peer-listen: required with node-id");
  if (o.peer_listen.port == 0) return invalid("peer-listen: port 0 (the peers must know the port)");
  if (!ipv4_or_localhost(o.peer_listen.host)) {
    return invalid("peer-listen: an IPv4 address or localhost (names and IPv6 are not supported yet), got '" +
                   o.peer_listen.host + "'");
  }
  std::map<std::string, std::uint64_t> owner;  // address -> node, to catch one address given twice
  for (const auto& [id, a] : o.peers) {
    const std::string where = "peers: node " + std::to_string(id) + " (" + format_peer_address(a) + "): ";
    if (id == 0) return invalid("peers: node ids start at 1");
    if (a.port == 0) return invalid(where + "port 0");
    if (!ipv4_or_localhost(a.host)) {
      return invalid(where + "an IPv4 address or localhost (names and IPv6 are not supported yet)");
    }
    if (auto [it, fresh] = owner.emplace(format_peer_address(a), id); !fresh) {
      return invalid(where + "the address of node " + std::to_string(it->second) + " too");
    }
  }
  // Listening on another node's address means the peers that dial that node reach this one: a node-id
  // copied from another node's configuration.
  if (auto it = owner.find(format_peer_address(o.peer_listen));
      it != owner.end() && it->second != o.node_id) {
    return invalid("peer-listen " + format_peer_address(o.peer_listen) + " is the address of node " +
                   std::to_string(it->second) + " in peers, not of node " + std::to_string(o.node_id) +
                   " (is node-id right?)");
  }
  if (o.groups < 1 || o.groups > max_groups) {
    return invalid("raft-groups: between 1 and " + std::to_string(max_groups) + ", got " +
                   std::to_string(o.groups));
  }
  if (o.lanes < 1 || o.lanes > std::min(max_lanes, o.groups)) {
    return invalid("raft-lanes: between 1 and " + std::to_string(std::min(max_lanes, o.groups)) +
                   " (at most 64, and no more than raft-groups), got " + std::to_string(o.lanes));
  }
  if (o.election_timeout_ms < min_election_timeout_ms || o.election_timeout_ms > max_election_timeout_ms) {
    return invalid("election-timeout-ms: between " + std::to_string(min_election_timeout_ms) + " and " +
                   std::to_string(max_election_timeout_ms) + ", got " +
                   std::to_string(o.election_timeout_ms));
  }
  return validate_peer_tls(o);
}

}  // namespace weir::cluster

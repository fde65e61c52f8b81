// peer_links over TLS (docs/replication.md, "Peer links"): the handshake of an outgoing link and its
// identity check, writing the queue through a TLS session, refusals, and the node certificates' names.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "base/log.h"
#include "cluster/peer_links.h"
#include "cluster/peer_links_state.h"

namespace weir::cluster {

using peer_links_internal::tls_record;

void peer_links::step_handshake(out_link& l) {
  peer& p = *l.owner;
  const auto r = l.tls->handshake();
  if (r == io::transport::would_block) return;  // every readiness of the stream steps it again
  if (r == io::transport::failed) {
    if (l.tls->protocol_failure()) {
      refused_tls(&p, fmt::format("the TLS handshake with node {} ({}:{}) failed: {}", p.id, p.addr.host,
                                  p.addr.port, l.tls->error()));
    } else {
      log::debug("peer_links: node {}: TLS handshake with node {}: {}", opts_.self, p.id, l.tls->error());
    }
    lose(l, "TLS handshake failed", 0);
    return;
  }
  // The CA vouched for the certificate; it must also be the certificate of the node we meant to reach
  // (peers maps ids to addresses, and an address may now be another node's).
  if (auto names = l.tls->peer_names(); !names_node(names, p.id)) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    refused_tls(&p, fmt::format("node {} ({}:{}) presented a certificate naming [{}], not {}", p.id,
                                p.addr.host, p.addr.port, list, node_name(p.id)));
    lose(l, "wrong certificate", 0);
    return;
  }
  link_up(l);
}

// TLS: the same bytes as flush, from the same queue, through SSL_write. A write that would block must be
// retried with the same bytes (and no fewer: SSL_write's retry rule), which the queue gives back: it is
// gathered again from the same position, only longer if frames were queued meanwhile (each lane's
// queue only grows at its end). A piece of at least a record goes out directly (no copy of large
// payloads); smaller ones are gathered into one record.
void peer_links::flush_tls(out_link& l) {
  peer& p = *l.owner;
  for (;;) {
    const std::byte* direct = nullptr;
    std::size_t direct_len = 0;
    scratch_.clear();
    // false: the record is full (or the piece goes out alone).
    auto add = [&](const std::byte* data, std::size_t len) {
      if (scratch_.empty() && len >= tls_record) {
        direct = data;
        direct_len = len;
        return false;
      }
      const std::size_t take = std::min(len, tls_record - scratch_.size());
      scratch_.insert(scratch_.end(), data, data + take);
      return scratch_.size() < tls_record;
    };
    bool more = true;
    if (l.hello_sent < hello_size) more = add(l.hello.data() + l.hello_sent, hello_size - l.hello_sent);
    std::size_t skip = l.front_sent;
    for (auto it = l.queue.begin(); more && it != l.queue.end(); ++it) {
      if (skip < header_size) more = add(it->header.data() + skip, header_size - skip);
      const std::size_t off = skip > header_size ? skip - header_size : 0;
      if (more && off < it->payload.size()) more = add(it->payload.data() + off, it->payload.size() - off);
      skip = 0;
    }
    const std::byte* data = direct != nullptr ? direct : scratch_.data();
    const std::size_t len = direct != nullptr ? direct_len : scratch_.size();
    if (len == 0) return;
    auto w = l.tls->write(reinterpret_cast<const char*>(data), len);
    if (w == io::transport::would_block) {
      l.blocked = true;  // on_writable (or on_readable, write_needs_readable) resumes
      return;
    }
    if (w < 0) {
      if (l.tls->protocol_failure()) {
        refused_tls(&p, fmt::format("node {} ({}:{}) ended the TLS session: {}", p.id, p.addr.host,
                                    p.addr.port, l.tls->error()));
      }
      lose(l, "TLS write failed", 0);
      return;
    }
    const auto written = static_cast<std::size_t>(w);
    p.bytes_sent += written;
    advance(l, written);
  }
}

void peer_links::refused_tls(peer* p, const std::string& why) {
  ++tls_refused_;
  if (p != nullptr) ++p->tls_refused;
  warn_limited(fmt::format("peer_links: node {}: TLS: {}", opts_.self, why));
}

std::string peer_links::node_name(std::uint64_t id) {
  return "weir-node-" + std::to_string(id);
}

bool peer_links::names_node(const std::vector<std::string>& names, std::uint64_t id) {
  const std::string want = node_name(id);
  return std::find(names.begin(), names.end(), want) != names.end();
}

status reload_peer_tls(io::tls_peer_context& ctx, const cluster_options& o) {
  // Checked on a scratch context first: a certificate for another node must not replace a good one.
  io::tls_peer_context probe;
  auto info = probe.load(o.peer_tls_cert, o.peer_tls_key, o.peer_tls_ca);
  if (!info) return info.err();
  if (!peer_links::names_node(probe.own_names(), o.node_id)) {
    std::string names;
    for (const auto& n : probe.own_names()) names += (names.empty() ? "" : ", ") + n;
    return make_error(std::errc::invalid_argument,
                      fmt::format("peer-tls-cert {}: the certificate names [{}], not {} (this node's "
                                  "node-id is {}): its peers would refuse it",
                                  o.peer_tls_cert, names, peer_links::node_name(o.node_id), o.node_id));
  }
  auto loaded = ctx.load(o.peer_tls_cert, o.peer_tls_key, o.peer_tls_ca);
  if (!loaded) return loaded.err();
  log::info("peer_links: node {}: peer TLS certificate {} (serial {}), valid until {}", o.node_id,
            loaded->subject, loaded->serial, loaded->not_after);
  return {};
}

result<std::shared_ptr<io::tls_peer_context>> load_peer_tls(const cluster_options& o) {
  auto ctx = std::make_shared<io::tls_peer_context>();
  if (status st = reload_peer_tls(*ctx, o); !st) return st.err();
  return ctx;
}

}  // namespace weir::cluster

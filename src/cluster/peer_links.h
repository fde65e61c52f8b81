// peer_links: one node's TCP links to the other nodes of its cluster, all on one io::event_loop
// (single-threaded: every call, and every callback, on that loop's thread).
//
// Lanes. Each node dials two outgoing connections to every peer, one per lane, and sends everything
// for that peer on them; it accepts its peers' connections on `listen` and only receives on those.
// Raft packets sent with raft_transport().send_urgent (node_io's small messages) and frames sent with
// send_urgent go on the urgent lane's connection, every other frame on the bulk lane's. Each lane has
// its own queue, its own kernel buffers and its own reads at the receiver, so an urgent frame waits
// neither for the megabytes of entries ahead of it in the bulk queue, nor for the bulk frame being
// written, nor for what the kernel holds of the bulk lane for a receiver that reads slowly (a loop
// starved of CPU): only for the urgent frames before it. Each lane keeps its own order; the lanes have
// no order between them (node_io decides what may take the urgent lane: node_io.h, "Lanes").
// One-way connections: no tie-breaking when both ends dial at once.
//
// Core lanes (docs/replication.md, "Lanes"): a node whose groups are split over several core lanes
// runs one peer_links per core lane, each on its lane's loop, with its own connections (two per peer,
// as above) named by the core lane in their hello. Core lane 0 listens on `listen` for all of them: a
// connection whose hello names another core lane is handed, hello read and TLS session established,
// to the handoff function (set_handoff), which posts it to that lane's loop, where that lane's
// peer_links adopts it (adopt) and judges the sender as its own acceptor would. The other core lanes
// listen nowhere. A hello naming a core lane the node does not have, or another count of core lanes
// than the node's (every node of a cluster runs the same `raft-lanes`), is refused.
//
// Wire (little-endian), per connection: the hello and the refusal of cluster/peer_hello.h, then frames:
//   hello (dialer -> acceptor, once): "weirpeer" | u32 version (4) | u64 sender id | u32 lanes | u32 the
//   sender's core lane count | u64 the sender's incarnation | u32 crc32c(first 36 bytes)
//   frames:                           u32 payload length | u8 channel | u32 crc32c(payload) | payload
// The acceptor closes a connection whose hello is malformed (another version among them: nodes of
// different peer-link versions do not link; version 3 added the core lane count to the hello, and
// snapshot acknowledgements that name the records held; version 4 the incarnation) or names an unknown
// node (or itself), and a connection that sends a bad frame (length over max_payload, wrong checksum). An
// unknown node's id goes to the stranger handler (set_stranger_handler), at the end of the loop turn. A
// new connection from a peer replaces the one it had on that lane (the peer restarted). Peers come and go
// at run time with add_peer and remove_peer (membership changes).
//
// Incarnations (options::book, core lane 0 only: it reads every hello, those of other core lanes
// included): the first hello of a peer's incarnation is recorded in the book, durably, before anything
// it sends is delivered; a hello from a peer whose book entry names another incarnation (the node lost
// its data directory and came back under its id) is refused: the acceptor logs an error, writes a
// peer_refusal on the connection and closes it. The dialer that reads a refusal hands it to the refusal
// handler (set_refusal_handler; the server stops the node) and closes the link. remove_peer forgets the
// id's incarnation (a member removed may join again on a new directory).
// Delivery (what raft::transport promises): a frame may be lost (link down, queue full, a frame cut by
// a broken connection), but what arrives arrives whole and, per sender and lane, in the order it was
// sent.
// Frames for a peer that is not connected wait in their lane's queue (max_pending_bytes for both lanes
// together, counting headers) and go out once it is; beyond that the newest are dropped. A lost connection is
// redialled after 50 ms, doubling to 1 s, reset by a successful connect; at once when the peer's own
// connection arrives (it is up again). TCP_NODELAY; TCP_USER_TIMEOUT 10 s on outgoing connections (a dead
// host fails the link).
//
// Mutual TLS (options::tls, from load_peer_tls): every connection, dialed and accepted, is a TLS 1.3
// session in which both ends present a certificate that the cluster CA verifies; the hello and the
// frames then travel inside it, unchanged. A certificate stands for node N when one of its names (the
// subject CN, or a subjectAltName DNS name or URI) is exactly `weir-node-N`: the dialer checks that the
// acceptor's certificate names the node it dialed, the acceptor that the dialer's names the id its hello
// claims. A connection that fails either check, or the handshake on a TLS error, is closed, logged
// (rate-limited) and counted (link_status::tls_refused when the peer is known, tls_refused() in all).
// An outgoing handshake not done within options::tls_handshake_timeout is given up and redialled.
// Without options::tls the links are plain TCP, and neither end speaks to the other kind.
//
// Do not destroy a peer_links from inside its own receiver (the loop may still hold events for its
// connections): destroy it from a timer or a posted task.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "cluster/cluster_options.h"
#include "cluster/incarnation_book.h"
#include "cluster/links.h"
#include "cluster/peer_hello.h"
#include "io/event_loop.h"
#include "raft/transport.h"

namespace weir::io {
class tcp_stream;
class tls_peer_context;
class tls_transport;
}  // namespace weir::io

namespace weir::cluster {

// Mutual TLS for the peer links from the peer-tls-* settings (all three set): the context, after checking
// that this node's own certificate names it (weir-node-<node_id>) and passes the CA, as the peers will
// check it. Errors name the setting and the file. Call again to reload (SIGHUP): into the same context.
result<std::shared_ptr<io::tls_peer_context>> load_peer_tls(const cluster_options& o);
status reload_peer_tls(io::tls_peer_context& ctx, const cluster_options& o);

class peer_links final : public links {
 public:
  struct options {
    std::uint64_t self = 0;
    peer_address listen;                          // where to accept (port 0 = ephemeral, for tests)
    std::map<std::uint64_t, peer_address> peers;  // every node, self included (self is skipped for dialing)
    std::size_t max_pending_bytes = 64u << 20;    // per peer; beyond: drop newest
    std::shared_ptr<io::tls_peer_context> tls;    // null: plain TCP; else mutual TLS (load_peer_tls)
    // TLS: an outgoing handshake not done by then is given up and redialled.
    std::chrono::milliseconds tls_handshake_timeout{10'000};
    // Bytes read from one incoming connection per readiness event (or posted continuation): the rest
    // is read on a later turn of the loop, so that a peer sending megabytes cannot hold this node's
    // loop (and its sends, heartbeats among them) for as long as it keeps sending.
    std::size_t read_budget = 1u << 20;
    // Bytes the kernel may hold for a link ahead of a frame still in the queue (0: the kernel's
    // defaults, which autotune to megabytes): the send buffer of outgoing connections (SO_SNDBUF) and
    // the receive buffer of accepted ones (SO_RCVBUF, set on the listener). (Linux doubles both for
    // overhead.) Each lane's connection has its own: what the kernel holds of the bulk lane for a
    // receiver whose loop the CPU starved no longer delays the urgent lane's frames.
    std::size_t send_buffer = 256u << 10;
    std::size_t receive_buffer = 1u << 20;
    // Core lanes (see above): this instance's, and how many the node has.
    std::uint32_t core_lane = 0;
    std::uint32_t core_lanes = 1;
    // This node's data directory's incarnation, sent in every hello (0: none, tests only).
    std::uint64_t incarnation = 0;
    // Core lane 0: the incarnations accepted from each peer (see above); null: none are checked.
    std::shared_ptr<incarnation_book> book;
  };
  // An accepted connection whose hello named another core lane, on its way to that lane's peer_links
  // (any thread may carry it; its destructor closes a connection nobody adopted).
  struct handed_conn {
    int fd = -1;
    std::unique_ptr<io::tls_transport> tls;  // TLS: the established session over fd
    std::vector<std::byte> bytes;            // what was read after the hello
    std::string remote;                      // "ip:port"
    std::uint64_t id = 0;                    // the hello's sender
    std::uint32_t link_lane = 0;             // bulk_lane or urgent_lane
    handed_conn() = default;
    handed_conn(const handed_conn&) = delete;
    handed_conn& operator=(const handed_conn&) = delete;
    ~handed_conn();
  };
  using handoff = std::function<void(std::uint32_t core_lane, std::unique_ptr<handed_conn> c)>;
  // Channel 0 carries raft packets (raft_transport()); channel 1 carries cluster messages (forwarded
  // writes, read-index). Other channel numbers pass through untouched.

  static constexpr std::uint32_t version = peer_link_version;
  static constexpr std::size_t hello_size = peer_hello_size;
  static constexpr std::uint32_t bulk_lane = 0, urgent_lane = 1, lane_count = 2;
  static constexpr std::size_t header_size = 9;
  static constexpr std::uint32_t max_payload = (64u << 20) + (64u << 10);  // a 64 MiB batch plus headroom
  // A frame that waited this long in a peer's queue is logged (rate-limited).
  static constexpr std::int64_t slow_frame_ms = 500;

  // Binds and listens at once, and starts dialing every peer. Call on the loop's thread.
  static result<std::unique_ptr<peer_links>> open(io::event_loop& loop, options o);
  ~peer_links() override;  // closes everything; no callbacks after it
  peer_links(const peer_links&) = delete;
  peer_links& operator=(const peer_links&) = delete;

  std::uint16_t listen_port() const { return listen_port_; }  // 0 on core lanes other than 0
  // Core lane 0: where accepted connections of the other core lanes go (called on this loop; without
  // one, they are refused).
  void set_handoff(handoff h) { handoff_ = std::move(h); }
  // Another core lane: takes a connection core lane 0 accepted for it. Call on this loop.
  void adopt(std::unique_ptr<handed_conn> c);
  // Where frames go (channel 0 goes to raft_transport()'s receiver instead, once one is set).
  void set_receiver(receiver r) override { receiver_ = std::move(r); }
  // Queues a frame for `to` (send: the bulk lane; send_urgent: the urgent lane); never blocks, never
  // calls back inside. Queued frames are written at the end of the loop turn, many per syscall. Lost if
  // the link cannot carry it.
  void send(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) override;
  void send_urgent(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) override;
  // The adapter raft's node_io runs on: send(to, packet) == send(to, 0, packet) (without a copy).
  raft::transport& raft_transport() override;
  // One entry per peer (self excluded), ordered by id.
  std::vector<link_status> status() const override;
  // A node that joins: dialled at once, its connections accepted from now on. A peer at another address:
  // its connection is closed and redialled there (queued frames wait). Self is ignored.
  weir::status add_peer(std::uint64_t id, std::string_view address) override;
  // A node that left: its connections are closed, its queue dropped, its hellos refused from now on.
  void remove_peer(std::uint64_t id) override;
  void set_stranger_handler(stranger_handler h) override { on_stranger_ = std::move(h); }
  // Called (on this loop, at most once per refusal read) when a peer refused this node's hello for its
  // incarnation: this node is not the one its peers knew under its id.
  using refusal_handler = std::function<void(const peer_refusal& r)>;
  void set_refusal_handler(refusal_handler h) { on_refusal_ = std::move(h); }
  // Core lane 0: forgets `id`'s incarnation (durably; a failure is logged). Other core lanes: nothing.
  void forget_incarnation(std::uint64_t id) override;

  // Peer-link TLS: on or off, and every connection closed for its certificate or a TLS error since
  // open (including those from connections that never said which node they were).
  bool tls() const { return opts_.tls != nullptr; }
  // SIGHUP: re-reads the peer-tls files of `o` (reload_peer_tls) into the context in force: new
  // handshakes take them, established links keep their sessions; on error the previous certificate
  // stays. Any thread (the context locks; opts_.tls never changes after open). Without TLS: nothing.
  weir::status reload_tls(const cluster_options& o) {
    return opts_.tls ? reload_peer_tls(*opts_.tls, o) : weir::status{};
  }
  std::uint64_t tls_refused() const { return tls_refused_; }
  // Reads that stopped at options::read_budget with more to read (continued in a posted task), over all
  // peers.
  std::uint64_t read_yields() const { return read_yields_; }
  // The certificate name that stands for node `id` ("weir-node-<id>"), and whether `names` (a
  // certificate's names, io::tls_transport::peer_names) hold it.
  static std::string node_name(std::uint64_t id);
  static bool names_node(const std::vector<std::string>& names, std::uint64_t id);

 private:
  struct frame;
  struct out_link;
  struct peer;
  class listener;
  class in_conn;
  class raft_adapter;

  peer_links(io::event_loop& loop, options o);
  // A new peer's state, its two lanes not yet dialled.
  peer& add_peer_state(std::uint64_t id, const peer_address& addr);
  void enqueue(std::uint64_t to, std::uint8_t channel, std::vector<std::byte> payload, bool urgent = false);
  // Takes the queue's front frame out (written, or cut by a lost connection).
  void pop_front(out_link& l);
  void dial(out_link& l);
  void on_connected(out_link& l, int err);
  void lose(out_link& l, const char* why, int err);
  void flush(out_link& l);
  void advance(out_link& l, std::size_t written);
  void note_wait(out_link& l, const frame& f);
  void drain_out(out_link& l);
  void schedule_turn_end();
  void on_turn_end();
  void accept_all();
  // An incoming connection said hello as `id` on `lane`; false: refuse it.
  bool identify(in_conn* c, std::uint64_t id, std::uint32_t lane);
  // Core lane 0: the book's judgement of a known peer's hello (refuse_and_tell: `out` is the refusal to
  // write, logged here; refuse: the book could not record a new incarnation, the next hello tries again).
  enum class hello_judgement { accept, refuse, refuse_and_tell };
  hello_judgement judge_incarnation(std::uint64_t id, std::uint64_t incarnation, const std::string& remote,
                                    peer_refusal& out);
  // The dialer: bytes the acceptor wrote on `l`; true once they made a whole refusal (the link was
  // closed and the refusal handler called).
  bool read_refusal(out_link& l, const char* bytes, std::size_t n);
  void retire(in_conn* c);
  void deliver(std::uint64_t from, std::uint8_t channel, std::span<const std::byte> payload);
  void count_received(std::uint64_t from, std::size_t bytes);
  void warn_limited(std::string msg);
  // Outgoing TLS: the handshake steps on every readiness until it is done; then the identity check.
  void step_handshake(out_link& l);
  void link_up(out_link& l);
  void flush_tls(out_link& l);
  // A connection closed for its certificate or a TLS error: counted and logged (rate-limited).
  void refused_tls(peer* p, const std::string& why);
  peer* find_peer(std::uint64_t id);  // nullptr: not a peer

  io::event_loop& loop_;
  options opts_;
  std::uint16_t listen_port_ = 0;
  std::unique_ptr<listener> listener_;
  std::map<std::uint64_t, std::unique_ptr<peer>> peers_;  // self excluded
  std::vector<std::unique_ptr<in_conn>> conns_;           // accepted, identified or not
  std::vector<out_link*> dirty_;                          // connections with frames to write this turn
  // Closed connections whose handlers the loop may still name in the events of the current turn:
  // freed at the end of the turn.
  std::vector<std::unique_ptr<in_conn>> retired_conns_;
  std::vector<std::unique_ptr<io::tcp_stream>> retired_streams_;
  std::vector<std::unique_ptr<peer>> retired_peers_;  // removed: their callbacks may still fire this turn
  io::event_loop::timer_id turn_end_timer_ = 0;
  receiver receiver_;
  stranger_handler on_stranger_;
  refusal_handler on_refusal_;
  handoff handoff_;
  std::vector<std::uint64_t> strangers_;  // refused this turn, for on_stranger_ at its end
  std::unique_ptr<raft_adapter> raft_;
  std::vector<std::byte> scratch_;  // TLS: small pieces gathered into one record (flush_tls)
  std::uint64_t tls_refused_ = 0;
  std::uint64_t read_yields_ = 0;
  std::int64_t last_warn_ms_ = -1'000'000;
  std::uint64_t suppressed_warnings_ = 0;
};

}  // namespace weir::cluster

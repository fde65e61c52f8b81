// cluster::peer_links with mutual TLS (options::tls) on a real event loop over 127.0.0.1, with
// certificates made at test time with the OpenSSL library: a cluster CA, node certificates that name
// weir-node-N, and the wrong kinds (another CA, another node's name, server use only).
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cluster/incarnation_book.h"
#include "cluster/peer_links.h"
#include "io/tls.h"
#include "storage/mem_env.h"
#include "unit/cluster/peer_links_support.h"

namespace weir::cluster {
namespace {

using namespace peer_links_testing;

struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;

// A CA (self-signed) that signs leaves into a temporary directory: NAME.crt, NAME.key; its own
// certificate in CA_NAME.pem.
class test_ca {
 public:
  test_ca(std::string dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {
    key_.reset(EVP_EC_gen("P-256"));
    cert_ = make(key_.get(), name_, nullptr, "", "");
    write(cert_.get(), ca_file());
  }
  std::string ca_file() const { return dir_ + "/" + name_ + ".pem"; }
  std::string cert_file(const std::string& leaf) const { return dir_ + "/" + leaf + ".crt"; }
  std::string key_file(const std::string& leaf) const { return dir_ + "/" + leaf + ".key"; }

  // A node certificate: subject CN `cn`, subjectAltName `san` (OpenSSL syntax, "" for none), extended
  // key usage `eku`.
  void leaf(const std::string& leaf, const std::string& cn, const std::string& san,
            const std::string& eku = "serverAuth,clientAuth") {
    pkey_ptr k(EVP_EC_gen("P-256"));
    x509_ptr x = make(k.get(), cn, cert_.get(), san, eku);
    write(x.get(), cert_file(leaf));
    std::FILE* f = std::fopen(key_file(leaf).c_str(), "w");
    PEM_write_PrivateKey(f, k.get(), nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
  }

 private:
  x509_ptr make(EVP_PKEY* key, const std::string& cn, X509* issuer, const std::string& san,
                const std::string& eku) {
    x509_ptr x(X509_new());
    X509_set_version(x.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x.get()), ++serial_);
    X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x.get()), 86'400);
    X509_set_pubkey(x.get(), key);
    X509_NAME* name = X509_get_subject_name(x.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()),
                               -1, -1, 0);
    X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
    auto add = [&](int nid, const std::string& value) {
      X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &v3, nid, value.c_str());
      EXPECT_NE(e, nullptr) << value;
      X509_add_ext(x.get(), e, -1);
      X509_EXTENSION_free(e);
    };
    if (issuer == nullptr) {
      add(NID_basic_constraints, "critical,CA:TRUE");
      add(NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
      add(NID_basic_constraints, "critical,CA:FALSE");
      if (!san.empty()) add(NID_subject_alt_name, san);
      if (!eku.empty()) add(NID_ext_key_usage, eku);
    }
    X509_sign(x.get(), issuer ? key_.get() : key, EVP_sha256());
    return x;
  }
  static void write(X509* x, const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    PEM_write_X509(f, x);
    std::fclose(f);
  }

  std::string dir_, name_;
  pkey_ptr key_;
  x509_ptr cert_;
  long serial_ = 0;
};

class temp_dir {
 public:
  temp_dir() {
    char tmpl[] = "/tmp/weir-peer-tls-test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

// The cluster CA with nodes 1..3 (weir-node-N as a DNS name; node 3's as its CN only), and a second CA
// that signs a certificate for weir-node-2 too.
class tls_fixture : public ::testing::Test {
 protected:
  tls_fixture() : ca(dir.path, "cluster-ca"), other_ca(dir.path, "other-ca") {
    ca.leaf("node1", "node one", "DNS:weir-node-1,IP:127.0.0.1");
    ca.leaf("node2", "node two", "DNS:weir-node-2");
    ca.leaf("node3", "weir-node-3", "");
    other_ca.leaf("stranger2", "stranger", "DNS:weir-node-2");
    other_ca.leaf("stranger1", "stranger", "DNS:weir-node-1");
  }
  cluster_options config(std::uint64_t id, const test_ca& issuer, const std::string& leaf,
                         const test_ca& trusted) const {
    cluster_options o;
    o.node_id = id;
    o.peer_tls_cert = issuer.cert_file(leaf);
    o.peer_tls_key = issuer.key_file(leaf);
    o.peer_tls_ca = trusted.ca_file();
    return o;
  }
  // Node `id` of `c` with the files of `o` (loaded without load_peer_tls's own-name check when `raw`:
  // an impostor or a misconfigured node).
  peer_links::options with_tls(const cluster& c, std::uint64_t id, const cluster_options& o,
                               bool raw = false) {
    auto lo = c.options(id);
    if (raw) {
      auto ctx = std::make_shared<io::tls_peer_context>();
      auto info = ctx->load(o.peer_tls_cert, o.peer_tls_key, o.peer_tls_ca);
      EXPECT_TRUE(info) << info.err().reason;
      lo.tls = ctx;
    } else {
      auto ctx = load_peer_tls(o);
      EXPECT_TRUE(ctx) << ctx.err().reason;
      if (ctx) lo.tls = *ctx;
    }
    return lo;
  }
  peer_links::options node(const cluster& c, std::uint64_t id) {
    return with_tls(c, id, config(id, ca, "node" + std::to_string(id), ca));
  }

  temp_dir dir;
  test_ca ca, other_ca;
};

TEST_F(tls_fixture, three_nodes_exchange_frames_over_tls) {
  cluster c(3);
  for (std::uint64_t id = 1; id <= 3; ++id) c.start(node(c, id));
  constexpr int per_stream = 100;
  c.lt.call([&] {
    for (int i = 0; i < per_stream; ++i) {
      for (std::uint64_t from = 1; from <= 3; ++from) {
        for (std::uint64_t to = 1; to <= 3; ++to) {
          if (from == to) continue;
          for (std::uint8_t ch : {0, 1})
            c.links(from).send(to, ch, bytes(fmt::format("{}-{}-{}-{}", from, to, ch, i)));
        }
      }
    }
    return 0;
  });
  for (std::uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(c.wait_received(id, 4 * per_stream)) << "node " << id;
    expect_in_order(c.received(id), id, per_stream);
  }
  auto s = c.status(1, 2);
  EXPECT_TRUE(s.out_connected);
  EXPECT_TRUE(s.in_connected);
  EXPECT_EQ(s.connects, peer_links::lane_count);
  EXPECT_EQ(s.tls_refused, 0u);
  EXPECT_TRUE(c.lt.call([&] { return c.links(1).tls(); }));
  EXPECT_EQ(c.lt.call([&] { return c.links(1).tls_refused(); }), 0u);
}

// Core lanes over TLS: core lane 0 hands the established session of a connection naming core lane 1 to
// that lane, which reads on in the same session (and what it already decrypted).
TEST_F(tls_fixture, core_lanes_hand_over_established_sessions) {
  std::map<std::uint64_t, std::shared_ptr<io::tls_peer_context>> contexts;
  for (std::uint64_t id : {1u, 2u}) {
    auto ctx = load_peer_tls(config(id, ca, "node" + std::to_string(id), ca));
    ASSERT_TRUE(ctx) << ctx.err().reason;
    contexts[id] = *ctx;
  }
  laned_cluster c([&](peer_links::options& o) { o.tls = contexts.at(o.self); });
  constexpr int n = 200;
  c.lt.call([&] {
    for (int i = 0; i < n; ++i) {
      c.links(1, 1).send(2, 3, bytes(fmt::format("1-2-3-{}", i)));
      c.links(2, 1).send_urgent(1, 4, bytes(fmt::format("2-1-4-{}", i)));
    }
    return 0;
  });
  ASSERT_TRUE(c.lt.wait_for([&] { return c.got(2, 1).size() == n && c.got(1, 1).size() == n; }, 10s));
  expect_in_order(c.lt.call([&] { return c.got(2, 1); }), 2, n);
  expect_in_order(c.lt.call([&] { return c.got(1, 1); }), 1, n);
  EXPECT_TRUE(c.lt.call([&] { return c.got(1, 0).empty() && c.got(2, 0).empty(); }));
  EXPECT_EQ(c.lt.call([&] { return c.links(1, 0).tls_refused() + c.links(1, 1).tls_refused(); }), 0u);
}

// Large payloads go out in records written directly from the frame, small ones gathered; frames queued
// while a large one is half written keep their order.
TEST_F(tls_fixture, large_and_small_frames_arrive_whole_and_in_order) {
  cluster c(2);
  c.start(node(c, 1));
  c.start(node(c, 2));
  std::string big(8u << 20, '\0');
  std::uint32_t x = 777;
  for (auto& ch : big) {
    x = x * 1103515245u + 12345u;
    ch = static_cast<char>(x >> 24);
  }
  std::vector<std::string> sent;
  for (int i = 0; i < 50; ++i) {
    sent.push_back(i % 10 == 5 ? big.substr(static_cast<std::size_t>(i) * 1000, 40'000 + i)
                   : i == 20   ? big
                               : fmt::format("small {}", i));
  }
  c.lt.call([&] {
    for (auto& m : sent) c.links(1).send(2, 1, bytes(m));
    return 0;
  });
  ASSERT_TRUE(c.wait_received(2, sent.size()));
  auto got = c.received(2);
  ASSERT_EQ(got.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) EXPECT_TRUE(got[i].text == sent[i]) << "frame " << i;
  EXPECT_EQ(c.status(1, 2).dropped_frames, 0u);
}

// Urgent frames queued while a TLS write is blocked go behind the bytes of that write (SSL_write must be
// given them again): large and small bulk frames with an urgent frame queued every turn all arrive
// whole, each lane in its order, and the link is never lost.
TEST_F(tls_fixture, urgent_frames_queued_during_blocked_writes_keep_the_session_whole) {
  cluster c(2);
  c.start(node(c, 1));
  c.start(node(c, 2));
  constexpr int bulk = 30, urgent = 300;
  const std::string big(1u << 20, 'b');
  auto alive = std::make_shared<bool>(true);
  int queued = 0;  // loop thread only
  std::function<void()> tick = [&c, &queued, &tick, alive] {
    if (!*alive || queued >= urgent) return;
    c.links(1).raft_transport().send_urgent(raft::node_id{2}, bytes(fmt::format("urgent-{}", queued++)));
    c.lt.loop.post(tick);
  };
  c.lt.call([&] {
    for (int i = 0; i < bulk; ++i) {
      c.links(1).raft_transport().send(raft::node_id{2}, bytes(i % 3 == 0 ? fmt::format("bulk-{}|{}", i, big)
                                                                          : fmt::format("bulk-{}|", i)));
    }
    c.lt.loop.post(tick);
    return 0;
  });
  ASSERT_TRUE(c.lt.wait_for([&] { return c.got(2).size() >= std::size_t(bulk + urgent); }, 30s));
  c.lt.call([&] {
    *alive = false;
    return 0;
  });
  int next_bulk = 0, next_urgent = 0;
  for (const auto& m : c.received(2)) {
    const std::string head = m.text.substr(0, m.text.find('|'));
    if (head.starts_with("urgent-")) {
      EXPECT_EQ(head, fmt::format("urgent-{}", next_urgent++));
    } else {
      EXPECT_EQ(head, fmt::format("bulk-{}", next_bulk));
      EXPECT_EQ(m.text.size(), head.size() + 1 + (next_bulk % 3 == 0 ? big.size() : 0)) << head;
      ++next_bulk;
    }
  }
  EXPECT_EQ(next_bulk, bulk);
  EXPECT_EQ(next_urgent, urgent);
  const auto st = c.status(1, 2);
  EXPECT_EQ(st.drops, 0u);
  EXPECT_EQ(st.dropped_frames, 0u);
  EXPECT_EQ(st.tls_refused, 0u);
}

TEST_F(tls_fixture, a_restarted_tls_peer_gets_new_frames) {
  cluster c(2);
  c.start(node(c, 1));
  c.start(node(c, 2));
  c.send(1, 2, 1, "one");
  ASSERT_TRUE(c.wait_received(2, 1));
  c.stop(2);
  ASSERT_TRUE(c.lt.wait_for([&] { return !c.links(1).status()[0].out_connected; }));
  c.send(1, 2, 1, "queued while 2 was down");
  c.start(node(c, 2));
  ASSERT_TRUE(c.wait_received(2, 1));
  EXPECT_EQ(c.received(2)[0].text, "queued while 2 was down");
  EXPECT_EQ(c.status(1, 2).tls_refused, 0u);
}

// Incarnations over TLS (docs/replication.md, "A node that lost its data directory"): node 2 back on a
// new directory is refused, and the refusal reaches it inside the session.
TEST_F(tls_fixture, a_peer_back_with_another_incarnation_reads_the_refusal_over_tls) {
  storage::mem_env env;
  ASSERT_TRUE(env.create_dirs("/data/node-1"));
  auto opened = incarnation_book::open(env, "/data/node-1");
  ASSERT_TRUE(opened);
  auto book = std::make_shared<incarnation_book>(std::move(*opened));
  cluster c(2);
  auto one = node(c, 1);
  one.book = book;
  c.start(std::move(one));
  auto two = node(c, 2);
  two.incarnation = 22;
  c.start(std::move(two));
  c.send(2, 1, 1, "first");
  ASSERT_TRUE(c.wait_received(1, 1));
  c.stop(2);
  two = node(c, 2);
  two.incarnation = 23;
  c.start(std::move(two));
  std::vector<peer_refusal> refusals;  // loop thread
  c.lt.call([&] {
    c.links(2).set_refusal_handler([&](const peer_refusal& r) { refusals.push_back(r); });
    return 0;
  });
  c.send(2, 1, 1, "from a new directory");
  ASSERT_TRUE(c.lt.wait_for([&] { return !refusals.empty(); }));
  const peer_refusal r = c.lt.call([&] { return refusals.front(); });
  EXPECT_EQ(r.refused_by, 1u);
  EXPECT_EQ(r.remembered, 22u);
  EXPECT_EQ(r.presented, 23u);
  EXPECT_EQ(c.received(1).size(), 1u);
  EXPECT_EQ(c.status(1, 2).tls_refused, 0u);  // a refusal, not a TLS failure
  c.stop(2);                                  // before the handler's vector goes
}

// Node 2's certificate comes from another CA (which node 2 trusts): node 1 refuses its connection and
// its certificate, and node 2 refuses node 1's; nothing goes through either way.
TEST_F(tls_fixture, a_peer_with_a_certificate_from_another_ca_is_refused) {
  cluster c(2);
  c.start(node(c, 1));
  c.start(with_tls(c, 2, config(2, other_ca, "stranger2", other_ca)));
  c.send(2, 1, 1, "from the stranger");
  c.send(1, 2, 1, "to the stranger");
  // Each node refuses the other's connections (unidentified: counted in tls_refused() only) and its
  // certificate when it dials (counted for the peer too).
  ASSERT_TRUE(c.lt.wait_for([&] {
    return c.links(1).tls_refused() >= 2 && c.links(2).tls_refused() >= 2 &&
           c.links(1).status()[0].tls_refused >= 1;
  }));
  auto s = c.status(1, 2);
  EXPECT_FALSE(s.out_connected);
  EXPECT_FALSE(s.in_connected);
  EXPECT_GE(s.tls_refused, 1u);  // its certificate, when node 1 dialed it
  EXPECT_FALSE(c.status(2, 1).in_connected);
  EXPECT_TRUE(c.received(1).empty());
  EXPECT_TRUE(c.received(2).empty());
}

// An impostor: a node with node 3's (valid) certificate says it is node 2. Node 1 refuses it (its hello
// claims a node its certificate does not name); and node 1, dialing node 2's address, finds node 3's
// certificate there and refuses that too.
TEST_F(tls_fixture, a_certificate_naming_another_node_is_refused) {
  cluster c(2);
  c.start(node(c, 1));
  c.start(with_tls(c, 2, config(2, ca, "node3", ca), /*raw=*/true));
  c.send(2, 1, 1, "claims to be node 2");
  c.send(1, 2, 1, "for node 2");
  ASSERT_TRUE(c.lt.wait_for([&] { return c.links(1).status()[0].tls_refused >= 2; }));
  auto s = c.status(1, 2);
  EXPECT_FALSE(s.in_connected);
  EXPECT_FALSE(s.out_connected);
  EXPECT_TRUE(c.received(1).empty());
  EXPECT_TRUE(c.received(2).empty());
  // The real node 2 is accepted afterwards.
  c.stop(2);
  c.start(node(c, 2));
  c.send(2, 1, 1, "the real node 2");
  ASSERT_TRUE(c.wait_received(1, 1));
  EXPECT_EQ(c.received(1)[0].text, "the real node 2");
}

// One side with TLS, the other without: no connection either way. Node 1 (TLS) reads node 2's plain
// hello as a broken handshake; node 2 (plain) reads node 1's ClientHello as a bad hello.
TEST_F(tls_fixture, tls_and_plain_nodes_do_not_connect) {
  cluster c(2);
  c.start(node(c, 1));
  c.start(2);                      // plain TCP
  c.send(2, 1, 1, "plain frame");  // goes out with node 2's hello, on the connection node 1 refuses
  c.send(1, 2, 1, "tls frame");
  ASSERT_TRUE(c.lt.wait_for([&] { return c.links(1).tls_refused() >= 1; }));
  ASSERT_TRUE(c.lt.wait_for(
      [&] { return c.links(1).status()[0].connects == 0 && !c.links(2).status()[0].in_connected; }));
  EXPECT_FALSE(c.status(1, 2).in_connected);
  EXPECT_FALSE(c.status(1, 2).out_connected);
  EXPECT_TRUE(c.received(1).empty());
  EXPECT_TRUE(c.received(2).empty());
  // A raw plain hello to the TLS node is closed too.
  raw_client r(c.port(1));
  r.send(hello(2) + frame(1, "raw"));
  EXPECT_TRUE(r.closed_by_node());
  EXPECT_TRUE(c.received(1).empty());
}

// A TLS client that trusts the CA but has no certificate (what `openssl s_client` does by default): TLS
// 1.3 completes its handshake, then the node's certificate_required alert ends the session.
TEST_F(tls_fixture, a_client_without_a_certificate_is_refused) {
  cluster c(2);
  c.start(node(c, 1));
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  ASSERT_EQ(SSL_CTX_load_verify_locations(ctx, ca.ca_file().c_str(), nullptr), 1);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  auto fd = io::connect_tcp("127.0.0.1", c.port(1), /*non_blocking=*/false);
  ASSERT_TRUE(fd);
  timeval tv{3, 0};
  ::setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, *fd);
  const int connected = SSL_connect(ssl);  // 1 in TLS 1.3 (the server checks afterwards), or the alert
  if (connected == 1) {
    const std::string h = hello(2) + frame(1, "no certificate");
    SSL_write(ssl, h.data(), static_cast<int>(h.size()));
    char b[16];
    EXPECT_LE(SSL_read(ssl, b, sizeof b), 0);  // the alert, or the end of the connection
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(*fd);
  ASSERT_TRUE(c.lt.wait_for([&] { return c.links(1).tls_refused() >= 1; }));
  EXPECT_FALSE(c.status(1, 2).in_connected);
  EXPECT_TRUE(c.received(1).empty());
}

// A reload (SIGHUP) changes what new handshakes present and trust; established links keep their
// sessions. Node 1 moves to another CA: node 2's new connections are refused; back: accepted again.
TEST_F(tls_fixture, a_reload_applies_to_new_connections) {
  cluster c(2);
  c.start(node(c, 1));
  c.start(node(c, 2));
  c.send(2, 1, 1, "before");
  ASSERT_TRUE(c.wait_received(1, 1));
  ASSERT_TRUE(c.lt.call([&] { return c.links(1).reload_tls(config(1, other_ca, "stranger1", other_ca)); }));
  c.send(2, 1, 1, "on the established link");
  ASSERT_TRUE(c.wait_received(1, 2));
  EXPECT_EQ(c.lt.call([&] { return c.links(1).tls_refused(); }), 0u);
  c.stop(2);
  c.start(node(c, 2));
  c.send(2, 1, 1, "after node 1 moved to another CA");
  ASSERT_TRUE(c.lt.wait_for([&] { return c.links(1).tls_refused() >= 1 && c.links(2).tls_refused() >= 1; }));
  EXPECT_EQ(c.received(1).size(), 2u);
  // A reload that fails (a certificate for another node) keeps the context in force; a good one
  // brings node 2 back (it redials within its backoff).
  EXPECT_FALSE(c.lt.call([&] { return c.links(1).reload_tls(config(1, ca, "node2", ca)); }));
  ASSERT_TRUE(c.lt.call([&] { return c.links(1).reload_tls(config(1, ca, "node1", ca)); }));
  ASSERT_TRUE(c.wait_received(1, 3));
  EXPECT_EQ(c.received(1)[2].text, "after node 1 moved to another CA");
}

// A peer port that accepts connections and never answers (a hung process): the dialer gives its
// handshake up after tls_handshake_timeout and dials again, instead of waiting forever.
TEST_F(tls_fixture, a_handshake_that_is_never_answered_is_given_up) {
  cluster c(2);
  int silent = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(silent, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(c.port(2));
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(silent, 16), 0);
  auto o = node(c, 1);
  o.tls_handshake_timeout = 100ms;
  c.start(std::move(o));
  c.send(1, 2, 1, "waits");
  // Connections the silent port has taken: a second one means the first handshake was given up.
  timeval tv{5, 0};
  ::setsockopt(silent, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::vector<int> taken;
  for (int i = 0; i < 2; ++i) {
    int fd = ::accept(silent, nullptr, nullptr);
    ASSERT_GE(fd, 0) << "connection " << i << " did not come";
    taken.push_back(fd);
  }
  auto s = c.status(1, 2);
  EXPECT_FALSE(s.out_connected);
  EXPECT_EQ(s.connects, 0u);
  EXPECT_EQ(s.dropped_frames, 0u);  // the frame still waits for node 2
  for (int fd : taken) ::close(fd);
  ::close(silent);
}

TEST_F(tls_fixture, load_peer_tls_checks_the_node_s_own_certificate) {
  ca.leaf("server-only", "x", "DNS:weir-node-1", "serverAuth");
  auto expect_error = [&](const cluster_options& o, const std::string& words) {
    auto r = load_peer_tls(o);
    ASSERT_FALSE(r) << "expected an error with " << words;
    EXPECT_NE(r.err().reason.find(words), std::string::npos) << r.err().reason;
  };
  EXPECT_TRUE(load_peer_tls(config(1, ca, "node1", ca)));
  EXPECT_TRUE(load_peer_tls(config(3, ca, "node3", ca)));  // CN weir-node-3
  expect_error(config(2, ca, "node1", ca), "not weir-node-2");
  expect_error(config(2, other_ca, "stranger2", ca), "does not verify against peer-tls-ca");
  expect_error(config(1, ca, "server-only", ca), "for TLS client use");
  auto o = config(1, ca, "node1", ca);
  o.peer_tls_key = ca.key_file("node2");
  expect_error(o, "does not match");
  o = config(1, ca, "node1", ca);
  o.peer_tls_ca = dir.path + "/missing.pem";
  expect_error(o, "peer-tls-ca");
  // A reload that fails keeps the context in force.
  auto ctx = load_peer_tls(config(1, ca, "node1", ca));
  ASSERT_TRUE(ctx);
  EXPECT_FALSE(reload_peer_tls(**ctx, config(1, ca, "node2", ca)));
  EXPECT_TRUE(peer_links::names_node((*ctx)->own_names(), 1));
  EXPECT_TRUE(reload_peer_tls(**ctx, config(1, ca, "node1", ca)));
}

TEST(peer_tls_options, the_three_files_go_together) {
  cluster_options o;
  o.node_id = 1;
  o.peer_listen = {"127.0.0.1", 5437};
  o.peers = {{1, {"127.0.0.1", 5437}}};
  EXPECT_TRUE(validate(o));
  o.peer_tls_cert = "n.crt";
  auto st = validate(o);
  ASSERT_FALSE(st);
  EXPECT_NE(st.err().reason.find("missing: peer-tls-key, peer-tls-ca"), std::string::npos) << st.err().reason;
  o.peer_tls_key = "n.key";
  o.peer_tls_ca = "ca.pem";
  EXPECT_TRUE(validate(o));
  EXPECT_TRUE(o.peer_tls());
  cluster_options alone;
  alone.peer_tls_ca = "ca.pem";
  st = validate(alone);
  ASSERT_FALSE(st);
  EXPECT_NE(st.err().reason.find("without node-id"), std::string::npos) << st.err().reason;
}

TEST(peer_tls_options, node_names) {
  EXPECT_EQ(peer_links::node_name(12), "weir-node-12");
  EXPECT_TRUE(peer_links::names_node({"x", "weir-node-1"}, 1));
  EXPECT_FALSE(peer_links::names_node({"weir-node-12", "weir-node-1x"}, 1));
  EXPECT_FALSE(peer_links::names_node({}, 1));
}

}  // namespace
}  // namespace weir::cluster

// TLS for the HTTP engine's server side (OpenSSL 3): `tls_context` holds the certificate and key that new
// handshakes use and swaps them on reload (SIGHUP) without touching established sessions;
// `tls_transport` is one connection's session over its non-blocking socket, driven by the event loop
// (the handshake runs inside the first reads; WANT_READ/WANT_WRITE become would_block with the
// readiness to wait for). TLS 1.2 and 1.3 only, ALPN "h2" (when offered) and "http/1.1", no renegotiation.
//
// `tls_peer_context` is the other use: mutual TLS between the nodes of a cluster (cluster/peer_links).
// One certificate and key per node, one cluster CA; both ends of every connection present a certificate
// and verify the other's against the CA. TLS 1.3 only (both ends are weir), no ALPN, no session tickets.
//
// tls_context and tls_peer_context are thread-safe (every core takes the current context per accepted
// connection; the signal thread reloads). A tls_transport belongs to one connection on one core.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "io/transport.h"

using SSL_CTX = struct ssl_ctx_st;
using SSL = struct ssl_st;

namespace weir::io {

class tls_transport;

enum class tls_errc { cert = 1, key = 2, mismatch = 3, expired = 4, setup = 5, ca = 6, untrusted = 7 };

// What was loaded, for the log and for tests.
struct tls_cert_info {
  std::string subject;
  std::string serial;             // hex, as `openssl x509 -serial` prints it
  std::string not_after;          // as OpenSSL prints it: "Dec  1 12:00:00 2027 GMT"
  std::int64_t seconds_left = 0;  // until not_after (negative: expired)
};

struct tls_options {
  // Kernel TLS (SSL_OP_ENABLE_KTLS): after the handshake OpenSSL hands the record layer to the kernel's
  // `tls` ULP when it is available, and falls back to user space when it is not.
  bool ktls = false;
};

class tls_context {
 public:
  explicit tls_context(tls_options o = {});
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  // Reads the PEM certificate chain (leaf first) and the PEM private key. Errors name the file: unreadable
  // or not PEM, a key that does not match the certificate, an expired certificate. On error the context in
  // force (if any) is kept: a failed reload changes nothing.
  result<tls_cert_info> load(const std::string& cert_file, const std::string& key_file);
  bool loaded() const;
  tls_cert_info info() const;

  // A server session for an accepted non-blocking socket, with the certificate in force now.
  std::unique_ptr<transport> accept(int fd);

  // Whether ALPN offers "h2" ahead of "http/1.1" (the HTTP engine sets it from server_options::h2).
  void offer_h2(bool on) { offer_h2_.store(on, std::memory_order_relaxed); }

 private:
  tls_options opts_;
  std::atomic<bool> offer_h2_{false};  // read by the ALPN callback of every context this one loads
  mutable std::mutex mu_;
  SSL_CTX* ctx_ = nullptr;  // guarded by mu_; sessions hold their own reference (SSL_new)
  tls_cert_info info_;
};

// Mutual TLS for cluster peer links: the node's certificate and key, and the cluster CA that every peer's
// certificate must chain to. Sessions made from it require a certificate from the other end (a client
// without one is refused by the server with certificate_required) and fail the handshake when it does
// not verify. Which node a verified certificate stands for is the caller's rule (tls_transport::
// peer_names). load() may be called again to replace all three (new handshakes only).
class tls_peer_context {
 public:
  tls_peer_context();
  ~tls_peer_context();
  tls_peer_context(const tls_peer_context&) = delete;
  tls_peer_context& operator=(const tls_peer_context&) = delete;

  // Reads the PEM certificate chain, the PEM key and the PEM CA bundle. Errors name the file and the
  // setting (peer-tls-cert, peer-tls-key, peer-tls-ca): unreadable or not PEM, a key that does not match,
  // an expired certificate, a certificate that the CA does not verify for both TLS client and server use
  // (extendedKeyUsage, when present, must include serverAuth and clientAuth). On error the context in
  // force (if any) is kept.
  result<tls_cert_info> load(const std::string& cert_file, const std::string& key_file,
                             const std::string& ca_file);
  bool loaded() const;
  tls_cert_info info() const;
  // The names of this node's own certificate (tls_transport::peer_names' rule), from the last load.
  std::vector<std::string> own_names() const;

  // A session over a connected (dialed) / accepted non-blocking socket; nullptr if nothing is loaded or
  // OpenSSL fails. The handshake runs in tls_transport::handshake() (or inside the first read/write).
  std::unique_ptr<tls_transport> connect(int fd);
  std::unique_ptr<tls_transport> accept(int fd);

 private:
  std::unique_ptr<tls_transport> session(int fd, bool client);

  mutable std::mutex mu_;
  SSL_CTX* ctx_ = nullptr;  // guarded by mu_; sessions hold their own reference
  tls_cert_info info_;
  std::vector<std::string> own_names_;
};

// One TLS session over `fd` (not owned): a server session (tls_context::accept), or either end of a
// peer link (tls_peer_context).
class tls_transport final : public transport {
 public:
  tls_transport(SSL* ssl, int fd);
  ~tls_transport() override;
  std::ptrdiff_t read(char* buf, std::size_t len) override;
  std::ptrdiff_t write(const char* buf, std::size_t len) override;
  bool read_needs_writable() const override { return read_wants_write_; }
  bool write_needs_readable() const override { return write_wants_read_; }
  bool short_read_drains() const override { return false; }
  bool established() const override;
  void shutdown_write() override;
  void close() override;

  // For tests and logs: the kernel took over the record layer (kTLS) for sending / receiving.
  bool ktls_send() const;
  bool ktls_recv() const;

  // Drives the handshake without moving application data: 1 once established, would_block (wait for
  // read_needs_writable() ? writable : readable), failed (error() says why).
  std::ptrdiff_t handshake();
  // Why the session failed: OpenSSL's reason, and the certificate verification error when there was
  // one ("certificate verify failed: unable to get local issuer certificate"). Empty before a failure.
  const std::string& error() const { return error_; }
  // The session failed on a TLS error (a certificate that did not verify or was refused, an alert, bytes
  // that are not TLS) rather than on a closed or reset connection.
  bool protocol_failure() const { return protocol_failure_; }
  // The names of the other end's certificate, once established: the subject CN, then every
  // subjectAltName DNS name and URI, in certificate order. Empty without a certificate.
  std::vector<std::string> peer_names() const;

 private:
  std::ptrdiff_t failure(int ret, bool reading);

  SSL* ssl_;
  int fd_;
  bool read_wants_write_ = false;
  bool write_wants_read_ = false;
  bool fatal_ = false;  // no SSL_shutdown after a fatal error (RFC 8446 6.2: the session is gone)
  bool shut_ = false;
  std::string error_;
  bool protocol_failure_ = false;
};

}  // namespace weir::io

// TLS for the HTTP engine's server side (OpenSSL 3): `tls_context` holds the certificate and key that new
// handshakes use and swaps them on reload (SIGHUP) without touching established sessions;
// `tls_transport` is one connection's session over its non-blocking socket, driven by the event loop
// (the handshake runs inside the first reads; WANT_READ/WANT_WRITE become would_block with the
// readiness to wait for). TLS 1.2 and 1.3 only, ALPN "http/1.1", no renegotiation.
//
// tls_context is thread-safe (every core takes the current context per accepted connection; the signal
// thread reloads). A tls_transport belongs to one connection on one core.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "io/transport.h"

using SSL_CTX = struct ssl_ctx_st;
using SSL = struct ssl_st;

namespace weir::io {

enum class tls_errc { cert = 1, key = 2, mismatch = 3, expired = 4, setup = 5 };

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

 private:
  tls_options opts_;
  mutable std::mutex mu_;
  SSL_CTX* ctx_ = nullptr;  // guarded by mu_; sessions hold their own reference (SSL_new)
  tls_cert_info info_;
};

// One server-side TLS session over `fd` (not owned).
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

 private:
  std::ptrdiff_t failure(int ret, bool reading);

  SSL* ssl_;
  int fd_;
  bool read_wants_write_ = false;
  bool write_wants_read_ = false;
  bool fatal_ = false;  // no SSL_shutdown after a fatal error (RFC 8446 6.2: the session is gone)
  bool shut_ = false;
};

}  // namespace weir::io

#include "io/tls.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace weir::io {
namespace {

// The last OpenSSL error as text, and an empty error queue afterwards (SSL_get_error needs it empty).
std::string openssl_reason() {
  unsigned long e = ERR_peek_last_error();
  char buf[256] = "unknown OpenSSL error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

std::string file_problem(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::strerror(errno);
  std::fclose(f);
  return "";
}

// RFC 7301 3.2: the server picks from the client's list: h2 first when the context offers it (RFC 9113
// 3.2), else HTTP/1.1. A client that offers ALPN with neither gets the fatal no_application_protocol alert.
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
  static const unsigned char h2_http11[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  const bool h2 = static_cast<const std::atomic<bool>*>(arg)->load(std::memory_order_relaxed);
  const unsigned char* ours = h2 ? h2_http11 : h2_http11 + 3;
  const unsigned int ours_len = h2 ? sizeof h2_http11 : sizeof h2_http11 - 3;
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, ours, ours_len, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

tls_cert_info describe(X509* x) {
  tls_cert_info info;
  char name[512];
  X509_NAME_oneline(X509_get_subject_name(x), name, sizeof name);
  info.subject = name;
  if (BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), nullptr)) {
    if (char* hex = BN_bn2hex(bn)) {
      info.serial = hex;
      OPENSSL_free(hex);
    }
    BN_free(bn);
  }
  if (BIO* mem = BIO_new(BIO_s_mem())) {
    ASN1_TIME_print(mem, X509_get0_notAfter(x));
    char* data = nullptr;
    long n = BIO_get_mem_data(mem, &data);
    if (n > 0) info.not_after.assign(data, static_cast<std::size_t>(n));
    BIO_free(mem);
  }
  int days = 0, secs = 0;
  if (ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(x)) == 1) {
    info.seconds_left = std::int64_t{days} * 86'400 + secs;
  }
  return info;
}

// Loads the certificate chain and the key into `ctx` and checks them (pair, expiry). `cert_setting` and
// `key_setting` name the settings in errors.
result<tls_cert_info> use_identity(SSL_CTX* ctx, const std::string& cert_file, const std::string& key_file,
                                   const std::string& cert_setting, const std::string& key_setting) {
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return make_error(tls_errc::cert, cert_setting + " " + cert_file + ": not a PEM certificate chain (" +
                                          openssl_reason() + ")");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    std::string why = openssl_reason();
    // OpenSSL checks the pair as it loads the key: a valid key for another certificate fails here.
    if (why.find("values mismatch") != std::string::npos || why.find("key values") != std::string::npos) {
      return make_error(tls_errc::mismatch, key_setting + " " + key_file +
                                                " does not match the certificate in " + cert_file + " (" +
                                                why + ")");
    }
    return make_error(tls_errc::key, key_setting + " " + key_file + ": not a PEM private key (" + why + ")");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return make_error(tls_errc::mismatch, key_setting + " " + key_file +
                                              " does not match the certificate in " + cert_file + " (" +
                                              openssl_reason() + ")");
  }
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr) return make_error(tls_errc::cert, cert_setting + " " + cert_file + ": no certificate");
  tls_cert_info info = describe(leaf);
  // Every client would refuse an expired certificate: say so at start (or refuse the reload) instead of
  // serving handshakes that all fail.
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
    return make_error(tls_errc::expired, cert_setting + " " + cert_file + ": the certificate expired on " +
                                             info.not_after + " (serial " + info.serial + ")");
  }
  return info;
}

// The names a certificate carries, for peer identity checks: the subject CN, then the subjectAltName DNS
// names and URIs.
std::vector<std::string> names_of(X509* x) {
  std::vector<std::string> out;
  if (x == nullptr) return out;
  X509_NAME* subject = X509_get_subject_name(x);
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) {
    ASN1_STRING* d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, d);
    if (n >= 0) out.emplace_back(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n));
    OPENSSL_free(utf8);
  }
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
    if (g->type != GEN_DNS && g->type != GEN_URI) continue;
    const ASN1_IA5STRING* v = g->type == GEN_DNS ? g->d.dNSName : g->d.uniformResourceIdentifier;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(v)),
                     static_cast<std::size_t>(ASN1_STRING_length(v)));
  }
  GENERAL_NAMES_free(sans);
  return out;
}

}  // namespace

tls_context::tls_context(tls_options o) : opts_(o) {
  // OpenSSL writes to the socket with write(2), which raises SIGPIPE when the peer has gone; the engine
  // handles EPIPE as a closed connection instead (plain TCP sends with MSG_NOSIGNAL).
  ::signal(SIGPIPE, SIG_IGN);
}

tls_context::~tls_context() {
  SSL_CTX_free(ctx_);
}

result<tls_cert_info> tls_context::load(const std::string& cert_file, const std::string& key_file) {
  ERR_clear_error();
  if (std::string why = file_problem(cert_file); !why.empty()) {
    return make_error(tls_errc::cert, "tls-cert " + cert_file + ": " + why);
  }
  if (std::string why = file_problem(key_file); !why.empty()) {
    return make_error(tls_errc::key, "tls-key " + key_file + ": " + why);
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return make_error(tls_errc::setup, "SSL_CTX_new: " + openssl_reason());
  struct guard {
    SSL_CTX* c;
    ~guard() { SSL_CTX_free(c); }
  } g{ctx};
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  std::uint64_t options = SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION |
                          SSL_OP_IGNORE_UNEXPECTED_EOF;  // a client that just closes is an end of stream
  if (opts_.ktls) options |= SSL_OP_ENABLE_KTLS;
  SSL_CTX_set_options(ctx, options);
  // TLS 1.2: forward secrecy and AEAD only (TLS 1.3 suites are all of that kind).
  if (SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1) {
    return make_error(tls_errc::setup, "cipher list: " + openssl_reason());
  }
  // Partial writes: SSL_write returns after each record, so the connection's output queue shrinks (and
  // its write-progress clock moves) as records leave. Moving buffer: the queue may grow between a
  // blocked write and its retry. Release buffers: an idle connection keeps no 16 KiB record buffers.
  SSL_CTX_set_mode(
      ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  // kTLS reads records from the socket itself; read-ahead would have OpenSSL take them first.
  if (!opts_.ktls) SSL_CTX_set_read_ahead(ctx, 1);
  // Stateless tickets only: no session cache shared (and locked) by every core.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 1);
  SSL_CTX_set_alpn_select_cb(ctx, select_alpn, &offer_h2_);

  auto info = use_identity(ctx, cert_file, key_file, "tls-cert", "tls-key");
  if (!info) return info.err();
  std::lock_guard lock(mu_);
  std::swap(ctx_, g.c);  // the guard frees the previous context; live sessions hold their own reference
  info_ = *info;
  return info;
}

bool tls_context::loaded() const {
  std::lock_guard lock(mu_);
  return ctx_ != nullptr;
}

tls_cert_info tls_context::info() const {
  std::lock_guard lock(mu_);
  return info_;
}

std::unique_ptr<transport> tls_context::accept(int fd) {
  SSL* ssl;
  {
    std::lock_guard lock(mu_);
    if (ctx_ == nullptr) return nullptr;
    ssl = SSL_new(ctx_);  // takes a reference on the context: a reload does not pull it away
  }
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return std::make_unique<tls_transport>(ssl, fd);
}

tls_peer_context::tls_peer_context() {
  ::signal(SIGPIPE, SIG_IGN);  // as tls_context: a write to a closed peer is EPIPE, not a signal
}

tls_peer_context::~tls_peer_context() {
  SSL_CTX_free(ctx_);
}

result<tls_cert_info> tls_peer_context::load(const std::string& cert_file, const std::string& key_file,
                                             const std::string& ca_file) {
  ERR_clear_error();
  if (std::string why = file_problem(cert_file); !why.empty()) {
    return make_error(tls_errc::cert, "peer-tls-cert " + cert_file + ": " + why);
  }
  if (std::string why = file_problem(key_file); !why.empty()) {
    return make_error(tls_errc::key, "peer-tls-key " + key_file + ": " + why);
  }
  if (std::string why = file_problem(ca_file); !why.empty()) {
    return make_error(tls_errc::ca, "peer-tls-ca " + ca_file + ": " + why);
  }
  // One context for both ends: a node dials (client sessions) and accepts (server sessions).
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (ctx == nullptr) return make_error(tls_errc::setup, "SSL_CTX_new: " + openssl_reason());
  struct guard {
    SSL_CTX* c;
    ~guard() { SSL_CTX_free(c); }
  } g{ctx};
  // Both ends are weir: TLS 1.3 only (RFC 8446), whose suites are all AEAD with forward secrecy.
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Partial writes: each record that leaves counts as progress (peer_links advances its queue by it).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  // Links are long-lived and redial rarely: no resumption, so no tickets for the acceptor to send (the
  // dialer never reads application data and would only have to drain them).
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);

  auto info = use_identity(ctx, cert_file, key_file, "peer-tls-cert", "peer-tls-key");
  if (!info) return info.err();
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return make_error(tls_errc::ca,
                      "peer-tls-ca " + ca_file + ": not a PEM certificate (" + openssl_reason() + ")");
  }
  // The server asks for a client certificate and fails the handshake without one (RFC 8446 4.4.2.4:
  // certificate_required); both ends verify the other's chain against the CA only (no default paths).
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  if (STACK_OF(X509_NAME)* cas = SSL_load_client_CA_file(ca_file.c_str()))
    SSL_CTX_set_client_CA_list(ctx, cas);
  ERR_clear_error();

  // Our own certificate must pass what the peers will check: a chain to the CA, valid for TLS server
  // and client use (extendedKeyUsage). Otherwise every handshake would fail later, on both ends.
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &chain);
  for (int purpose : {X509_PURPOSE_SSL_SERVER, X509_PURPOSE_SSL_CLIENT}) {
    X509_STORE_CTX* vc = X509_STORE_CTX_new();
    if (vc == nullptr || X509_STORE_CTX_init(vc, SSL_CTX_get_cert_store(ctx), leaf, chain) != 1) {
      X509_STORE_CTX_free(vc);
      return make_error(tls_errc::setup, "X509_STORE_CTX_init: " + openssl_reason());
    }
    X509_STORE_CTX_set_purpose(vc, purpose);
    const int ok = X509_verify_cert(vc);
    const int err = X509_STORE_CTX_get_error(vc);
    X509_STORE_CTX_free(vc);
    ERR_clear_error();
    if (ok != 1) {
      return make_error(tls_errc::untrusted,
                        "peer-tls-cert " + cert_file + " does not verify against peer-tls-ca " + ca_file +
                            " for TLS " + (purpose == X509_PURPOSE_SSL_SERVER ? "server" : "client") +
                            " use: " + X509_verify_cert_error_string(err));
    }
  }
  std::vector<std::string> names = names_of(leaf);
  std::lock_guard lock(mu_);
  std::swap(ctx_, g.c);
  info_ = *info;
  own_names_ = std::move(names);
  return info;
}

bool tls_peer_context::loaded() const {
  std::lock_guard lock(mu_);
  return ctx_ != nullptr;
}

tls_cert_info tls_peer_context::info() const {
  std::lock_guard lock(mu_);
  return info_;
}

std::vector<std::string> tls_peer_context::own_names() const {
  std::lock_guard lock(mu_);
  return own_names_;
}

std::unique_ptr<tls_transport> tls_peer_context::connect(int fd) {
  return session(fd, true);
}

std::unique_ptr<tls_transport> tls_peer_context::accept(int fd) {
  return session(fd, false);
}

std::unique_ptr<tls_transport> tls_peer_context::session(int fd, bool client) {
  SSL* ssl;
  {
    std::lock_guard lock(mu_);
    if (ctx_ == nullptr) return nullptr;
    ssl = SSL_new(ctx_);
  }
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  if (client) {
    SSL_set_connect_state(ssl);
  } else {
    SSL_set_accept_state(ssl);
  }
  return std::make_unique<tls_transport>(ssl, fd);
}

tls_transport::tls_transport(SSL* ssl, int fd) : ssl_(ssl), fd_(fd) {}

tls_transport::~tls_transport() {
  close();
}

std::ptrdiff_t tls_transport::read(char* buf, std::size_t len) {
  if (ssl_ == nullptr || fatal_) return failed;
  int n = SSL_read(ssl_, buf, static_cast<int>(std::min<std::size_t>(len, INT_MAX)));
  if (n > 0) {
    read_wants_write_ = false;
    return n;
  }
  return failure(n, true);
}

std::ptrdiff_t tls_transport::write(const char* buf, std::size_t len) {
  if (ssl_ == nullptr || fatal_) return failed;
  int n = SSL_write(ssl_, buf, static_cast<int>(std::min<std::size_t>(len, INT_MAX)));
  if (n > 0) {
    write_wants_read_ = false;
    return n;
  }
  return failure(n, false);
}

std::ptrdiff_t tls_transport::failure(int ret, bool reading) {
  const int code = SSL_get_error(ssl_, ret);
  switch (code) {
    case SSL_ERROR_WANT_READ:
      (reading ? read_wants_write_ : write_wants_read_) = !reading;
      return would_block;
    case SSL_ERROR_WANT_WRITE:
      (reading ? read_wants_write_ : write_wants_read_) = reading;
      return would_block;
    case SSL_ERROR_ZERO_RETURN:  // close_notify: the peer's end of stream
      return reading ? 0 : failed;
    default: {
      // SSL_ERROR_SSL (a bad record, plaintext on the TLS port, a refused version or certificate) or
      // SSL_ERROR_SYSCALL (reset): the session cannot go on.
      const int saved_errno = errno;
      fatal_ = true;
      protocol_failure_ = code == SSL_ERROR_SSL;
      error_ = ERR_peek_last_error() != 0 ? openssl_reason()
               : saved_errno != 0         ? std::strerror(saved_errno)
                                          : "connection closed";
      if (long v = SSL_get_verify_result(ssl_); v != X509_V_OK) {
        error_ += std::string(" (certificate: ") + X509_verify_cert_error_string(v) + ")";
      }
      errno = saved_errno;
      return failed;
    }
  }
}

std::ptrdiff_t tls_transport::handshake() {
  if (ssl_ == nullptr || fatal_) return failed;
  if (SSL_is_init_finished(ssl_) == 1) return 1;
  errno = 0;
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    read_wants_write_ = false;
    return 1;
  }
  std::ptrdiff_t f = failure(r, true);
  if (f == 0) {  // the peer closed (or sent close_notify) before the handshake finished
    fatal_ = true;
    error_ = "connection closed during the handshake";
    return failed;
  }
  return f;
}

std::vector<std::string> tls_transport::peer_names() const {
  if (ssl_ == nullptr) return {};
  return names_of(SSL_get0_peer_certificate(ssl_));
}

bool tls_transport::established() const {
  return ssl_ != nullptr && SSL_is_init_finished(ssl_) == 1;
}

void tls_transport::shutdown_write() {
  if (ssl_ != nullptr && !fatal_ && !shut_ && SSL_is_init_finished(ssl_) == 1) {
    SSL_shutdown(ssl_);  // sends close_notify; we do not wait for the peer's
    ERR_clear_error();
  }
  shut_ = true;
  ::shutdown(fd_, SHUT_WR);
}

void tls_transport::close() {
  if (ssl_ == nullptr) return;
  if (!fatal_ && !shut_ && SSL_is_init_finished(ssl_) == 1) {
    SSL_shutdown(ssl_);  // best effort on a non-blocking socket
  }
  SSL_free(ssl_);
  ERR_clear_error();
  ssl_ = nullptr;
}

bool tls_transport::ktls_send() const {
  return ssl_ != nullptr && BIO_get_ktls_send(SSL_get_wbio(ssl_)) != 0;
}

bool tls_transport::ktls_recv() const {
  return ssl_ != nullptr && BIO_get_ktls_recv(SSL_get_rbio(ssl_)) != 0;
}

}  // namespace weir::io

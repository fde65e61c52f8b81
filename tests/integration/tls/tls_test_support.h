// TLS test helpers: certificates made at test time with the OpenSSL library (a self-signed CA and leaves
// it signs; private keys only ever in a temporary directory), and a blocking TLS client that is an
// http::testing::client (same request/response helpers) with a handshake in front.
#pragma once

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "integration/http/http_test_support.h"

namespace weir::tls_testing {

struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;

inline pkey_ptr new_key() {
  return pkey_ptr(EVP_EC_gen("P-256"));
}

// A certificate for `key`, signed by `issuer_key` (itself when `issuer` is null), valid from
// now + not_before_s to now + not_after_s.
inline x509_ptr make_cert(EVP_PKEY* key, long serial, const std::string& cn, X509* issuer,
                          EVP_PKEY* issuer_key, long not_before_s = -3600, long not_after_s = 86'400) {
  x509_ptr x(X509_new());
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), not_after_s);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
  auto add = [&](int nid, const char* value) {
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
    X509_add_ext(x.get(), e, -1);
    X509_EXTENSION_free(e);
  };
  if (issuer == nullptr) {
    add(NID_basic_constraints, "critical,CA:TRUE");
    add(NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add(NID_basic_constraints, "critical,CA:FALSE");
    add(NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    add(NID_ext_key_usage, "serverAuth");
  }
  X509_sign(x.get(), issuer_key ? issuer_key : key, EVP_sha256());
  return x;
}

inline void write_pem(const std::string& path, X509* x) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  PEM_write_X509(f, x);
  std::fclose(f);
}
inline void write_pem(const std::string& path, EVP_PKEY* k) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

// A temporary directory with ca.pem and leaf certificates made on demand; removed with the object.
class cert_dir {
 public:
  cert_dir() {
    char tmpl[] = "/tmp/weir-tls-test.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ca_key_ = new_key();
    ca_ = make_cert(ca_key_.get(), 1, "weir test CA", nullptr, nullptr);
    write_pem(path("ca.pem"), ca_.get());
  }
  ~cert_dir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string ca() const { return path("ca.pem"); }
  // Writes NAME.crt and NAME.key: a leaf for 127.0.0.1 signed by the CA.
  void leaf(const std::string& name, long serial, long not_before_s = -3600, long not_after_s = 86'400) {
    pkey_ptr k = new_key();
    x509_ptr x = make_cert(k.get(), serial, "127.0.0.1", ca_.get(), ca_key_.get(), not_before_s, not_after_s);
    write_pem(path(name + ".crt"), x.get());
    write_pem(path(name + ".key"), k.get());
  }

 private:
  std::string dir_;
  pkey_ptr ca_key_;
  x509_ptr ca_;
};

struct client_options {
  int min_version = TLS1_2_VERSION;
  int max_version = TLS1_3_VERSION;
  // ALPN protocols offered, in wire form (length-prefixed names); empty: no ALPN extension.
  std::string alpn = std::string("\x02h2\x08http/1.1", 12);
};

// A blocking TLS client over loopback that verifies the server against `ca_file`. handshake() says
// whether the session was established; the http::testing::client helpers then speak HTTP through it.
class tls_client : public http::testing::client {
 public:
  tls_client(std::uint16_t port, const std::string& ca_file, client_options o = {}) : client(port) {
    timeval tv{5, 0};  // every blocking read is bounded
    ::setsockopt(fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (o.min_version < TLS1_2_VERSION) SSL_CTX_set_security_level(ctx_, 0);  // let it offer TLS 1.0
    SSL_CTX_set_min_proto_version(ctx_, o.min_version);
    SSL_CTX_set_max_proto_version(ctx_, o.max_version);
    SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (!o.alpn.empty()) {
      SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(o.alpn.data()),
                              static_cast<unsigned>(o.alpn.size()));
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd());
    SSL_set1_host(ssl_, "127.0.0.1");
    ok_ = SSL_connect(ssl_) == 1;
    if (!ok_) {
      char buf[256];
      ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
      error_ = buf;
      ERR_clear_error();
    }
  }
  ~tls_client() override {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  bool handshake() const { return ok_; }
  const std::string& error() const { return error_; }
  std::string alpn() const {
    const unsigned char* p = nullptr;
    unsigned n = 0;
    SSL_get0_alpn_selected(ssl_, &p, &n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  std::string version() const { return SSL_get_version(ssl_); }
  long peer_serial() const {
    X509* x = SSL_get0_peer_certificate(ssl_);
    return x ? ASN1_INTEGER_get(X509_get0_serialNumber(x)) : -1;
  }
  // The raw session, for a test that sends through it directly.
  SSL* ssl() { return ssl_; }

 protected:
  long send_some(const char* p, std::size_t n) override {
    int r = SSL_write(ssl_, p, static_cast<int>(n));
    return r > 0 ? r : -1;
  }
  long recv_some(char* p, std::size_t n) override {
    int r = SSL_read(ssl_, p, static_cast<int>(n));
    ERR_clear_error();
    return r > 0 ? r : 0;  // close_notify, a reset or the 5 s bound: the end for the test
  }
  bool has_buffered() const override { return SSL_pending(ssl_) > 0; }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
  std::string error_;
};

}  // namespace weir::tls_testing

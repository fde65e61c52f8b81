#include "subscriptions/signing_key.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/json_writer.h"
#include "subscriptions/crypto_util.h"

namespace weir::subscriptions {
namespace {
constexpr std::string_view k_key_file = "webhook-signing.key";

EVP_PKEY* as_pkey(void* p) {
  return static_cast<EVP_PKEY*>(p);
}

std::string raw_public(EVP_PKEY* k) {
  std::array<unsigned char, 32> pub{};
  std::size_t len = pub.size();
  int ok = EVP_PKEY_get_raw_public_key(k, pub.data(), &len);
  WEIR_ASSERT(ok == 1 && len == 32, "EVP_PKEY_get_raw_public_key failed: ok={} len={}", ok, len);
  return std::string(reinterpret_cast<const char*>(pub.data()), len);
}

result<std::string> pem_of(EVP_PKEY* k) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (!bio) return make_error(signing_errc::crypto, "BIO_new failed");
  std::string out;
  if (PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr) == 1) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    out.assign(data, static_cast<std::size_t>(n));
  }
  BIO_free(bio);
  if (out.empty()) return make_error(signing_errc::crypto, "PEM_write_bio_PrivateKey failed");
  return out;
}

EVP_PKEY* new_ed25519() {
  EVP_PKEY* k = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr);
  if (ctx && EVP_PKEY_keygen_init(ctx) == 1) EVP_PKEY_keygen(ctx, &k);
  EVP_PKEY_CTX_free(ctx);
  return k;
}

// Writes the key with mode 0600 via a temporary file and rename, so a crash never leaves half a key.
status write_key_file(const std::filesystem::path& path, const std::string& pem) {
  std::string tmp = path.string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(signing_errc::io, fmt::format("open {}: {}", tmp, std::strerror(errno)));
  std::size_t off = 0;
  while (off < pem.size()) {
    ssize_t n = ::write(fd, pem.data() + off, pem.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return make_error(signing_errc::io, fmt::format("write {}: {}", tmp, std::strerror(errno)));
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    return make_error(signing_errc::io, fmt::format("fsync {}: {}", tmp, std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return make_error(signing_errc::io, fmt::format("rename {}: {}", tmp, std::strerror(errno)));
  }
  return {};
}
}  // namespace

void signing_key::pkey_deleter::operator()(void* p) const {
  EVP_PKEY_free(as_pkey(p));
}

signing_key::signing_key(void* pkey) : pkey_(pkey) {
  x_ = base64url_encode(raw_public(as_pkey(pkey)));
  // RFC 7638 3.2: the thumbprint input has the required members only, in lexicographic order, no spaces.
  std::string canonical = fmt::format(R"({{"crv":"Ed25519","kty":"OKP","x":"{}"}})", x_);
  kid_ = "ds_" + base64url_encode(sha256(canonical));
}

signing_key::~signing_key() = default;

result<std::shared_ptr<const signing_key>> signing_key::generate() {
  EVP_PKEY* k = new_ed25519();
  if (!k) return make_error(signing_errc::crypto, "Ed25519 key generation failed");
  return std::shared_ptr<const signing_key>(new signing_key(k));
}

result<std::shared_ptr<const signing_key>> signing_key::load_or_create(const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return make_error(signing_errc::io, fmt::format("create {}: {}", data_dir, ec.message()));
  fs::path path = fs::path(data_dir) / k_key_file;
  if (fs::exists(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string pem = ss.str();
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    EVP_PKEY* k = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(bio);
    if (!k) return make_error(signing_errc::bad_key, fmt::format("{}: not a PEM private key", path.string()));
    if (EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
      EVP_PKEY_free(k);
      return make_error(signing_errc::bad_key, fmt::format("{}: not an Ed25519 key", path.string()));
    }
    return std::shared_ptr<const signing_key>(new signing_key(k));
  }
  auto fresh = generate();
  if (!fresh) return fresh;
  auto pem = pem_of(as_pkey((*fresh)->pkey_.get()));
  if (!pem) return pem.err();
  if (auto st = write_key_file(path, *pem); !st) return st.err();
  return fresh;
}

std::string jwks_json_of(const std::vector<std::pair<std::string, std::string>>& keys) {
  json_writer w;
  w.begin_object().key("keys").begin_array();
  for (const auto& [kid, x] : keys) {
    w.begin_object();
    w.key("kty").value("OKP").key("crv").value("Ed25519").key("kid").value(kid);
    w.key("use").value("sig").key("alg").value("EdDSA").key("x").value(x);
    w.end_object();
  }
  w.end_array().end_object();
  return w.take();
}

std::string signing_key::jwks_json() const {
  return jwks_json_of({{kid_, x_}});
}

std::string signing_key::sign(std::string_view message) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  WEIR_ASSERT(ctx != nullptr, "EVP_MD_CTX_new failed");
  std::array<unsigned char, 64> sig{};
  std::size_t len = sig.size();
  // Ed25519 is a one-shot signature: no digest (RFC 8032), hence a null md.
  int ok = EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, as_pkey(pkey_.get()));
  if (ok == 1) {
    ok = EVP_DigestSign(ctx, sig.data(), &len, reinterpret_cast<const unsigned char*>(message.data()),
                        message.size());
  }
  EVP_MD_CTX_free(ctx);
  WEIR_ASSERT(ok == 1 && len == 64, "Ed25519 sign failed: ok={} len={}", ok, len);
  return std::string(reinterpret_cast<const char*>(sig.data()), len);
}

std::string signing_key::webhook_signature(std::int64_t unix_seconds, std::string_view body) const {
  std::string t = std::to_string(unix_seconds);
  std::string message = t;
  message += '.';
  message += body;
  return fmt::format("t={},kid={},ed25519={}", t, kid_, base64url_encode(sign(message)));
}

bool signing_key::verify(std::string_view public_key_raw, std::string_view message,
                         std::string_view signature) {
  EVP_PKEY* k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                            reinterpret_cast<const unsigned char*>(public_key_raw.data()),
                                            public_key_raw.size());
  if (!k) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, k) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                             reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(k);
  return ok;
}

}  // namespace weir::subscriptions

#include "tier/s3_signer.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdint>
#include <ctime>

#include <fmt/format.h>

#include "base/assert.h"

namespace weir::tier {
namespace {

std::string to_hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(const void* data, std::size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest: OpenSSL 3's one-shot digest, thread-safe.
  int ok = EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr);
  WEIR_ASSERT(ok == 1 && len == 32, "EVP_Digest(sha256) failed");
  return to_hex(md, len);
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  unsigned char* r = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                          reinterpret_cast<const unsigned char*>(data.data()), data.size(), md, &len);
  WEIR_ASSERT(r != nullptr && len == 32, "HMAC(sha256) failed");
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// SigV4: header values trimmed, inner runs of spaces collapsed to one.
std::string trim_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

const char* const empty_payload_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string payload_sha256_hex(std::span<const std::byte> body) {
  return sha256_hex(body.data(), body.size());
}

std::string payload_sha256_hex(std::string_view body) {
  return sha256_hex(body.data(), body.size());
}

std::string uri_encode(std::string_view s, bool encode_slash) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || (c == '/' && !encode_slash)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 0xf]);
    }
  }
  return out;
}

std::string canonical_query(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query)
    encoded.emplace_back(uri_encode(name, true), uri_encode(value, true));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

std::string sigv4_signing_key(std::string_view secret, std::string_view date8, std::string_view region,
                              std::string_view service) {
  std::string k = hmac_sha256("AWS4" + std::string(secret), date8);
  k = hmac_sha256(k, region);
  k = hmac_sha256(k, service);
  return hmac_sha256(k, "aws4_request");
}

sigv4_parts sigv4_sign(const s3_request_to_sign& req, const s3_credentials& creds, std::string_view region,
                       std::string_view amz_date, std::string_view service) {
  sigv4_parts out;
  // Canonical headers: lower-case names, trimmed values, sorted by name; repeated names joined by ','.
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : req.headers) {
    std::string n = lower(trim_value(name));
    std::string v = trim_value(value);
    auto it = std::find_if(headers.begin(), headers.end(), [&](const auto& h) { return h.first == n; });
    if (it != headers.end()) {
      it->second += "," + v;
    } else {
      headers.emplace_back(std::move(n), std::move(v));
    }
  }
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!out.signed_headers.empty()) out.signed_headers.push_back(';');
    out.signed_headers += name;
  }
  out.canonical_request =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", req.method, req.path.empty() ? "/" : req.path,
                  canonical_query(req.query), canonical_headers, out.signed_headers, req.payload_hash);

  std::string_view date8 = amz_date.substr(0, std::min<std::size_t>(8, amz_date.size()));
  std::string scope = fmt::format("{}/{}/{}/aws4_request", date8, region, service);
  out.string_to_sign = fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope,
                                   sha256_hex(out.canonical_request.data(), out.canonical_request.size()));
  std::string key = sigv4_signing_key(creds.secret_access_key, date8, region, service);
  std::string mac = hmac_sha256(key, out.string_to_sign);
  out.signature = to_hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  out.authorization = fmt::format("AWS4-HMAC-SHA256 Credential={}/{},SignedHeaders={},Signature={}",
                                  creds.access_key_id, scope, out.signed_headers, out.signature);
  return out;
}

std::string amz_date_from_unix(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

sigv4_parts sign_request(s3_request_to_sign& req, const s3_credentials& creds, std::string_view region,
                         std::string_view host, std::string_view amz_date) {
  req.headers.emplace_back("host", std::string(host));
  req.headers.emplace_back("x-amz-date", std::string(amz_date));
  req.headers.emplace_back("x-amz-content-sha256", req.payload_hash);
  if (!creds.session_token.empty()) req.headers.emplace_back("x-amz-security-token", creds.session_token);
  sigv4_parts parts = sigv4_sign(req, creds, region, amz_date);
  req.headers.emplace_back("Authorization", parts.authorization);
  return parts;
}

}  // namespace weir::tier

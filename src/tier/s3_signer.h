// s3_signer: AWS Signature Version 4 for S3 requests, in the Authorization header (AWS S3 API reference,
// "Signature Calculations for the Authorization Header"), built by weir rather than by curl: curl 7.88's
// CURLOPT_AWS_SIGV4 neither sorts nor encodes the query and does not sign x-amz-content-sha256
// (docs/cold-tier.md, "Signing").
//
// Pure functions over OpenSSL's one-shot SHA-256 and HMAC; thread-safe. Tested against the AWS
// documentation's example signatures (tests/unit/tier/s3_signer_test.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::tier {

// Who signs. The secret and the session token are never printed (describe() shows the key id only).
struct s3_credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials: sent as x-amz-security-token and signed
  bool empty() const { return access_key_id.empty() || secret_access_key.empty(); }
};

// SHA-256 of the body, lower-case hex: the value of x-amz-content-sha256 (always the real hash: weir sends
// no UNSIGNED-PAYLOAD).
std::string payload_sha256_hex(std::span<const std::byte> body);
std::string payload_sha256_hex(std::string_view body);
// The hash of an empty body (e3b0c442...b855).
extern const char* const empty_payload_sha256;

// RFC 3986 percent-encoding the SigV4 way: unreserved characters (A-Z a-z 0-9 - . _ ~) kept, every other
// byte as %XY (upper-case hex); '/' kept only when encode_slash is false (object key paths).
std::string uri_encode(std::string_view s, bool encode_slash);

// One request as it will be sent. `path` is the already-encoded absolute path ("/bucket/key" path-style,
// "/key" virtual-hosted: uri_encode(key, false)); query parameters are raw (unencoded) name/value pairs;
// headers are the ones to sign (name case and surrounding spaces do not matter). `host` and
// `x-amz-date` and `x-amz-content-sha256` must be among them (sign_request adds them).
struct s3_request_to_sign {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_hash;  // hex SHA-256 of the body
};

// The intermediate steps, for tests and debugging (none holds the secret).
struct sigv4_parts {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;       // hex
  std::string signed_headers;  // "host;x-amz-content-sha256;x-amz-date"
  std::string authorization;   // the Authorization header's value
};

// The canonical query string: names and values encoded (uri_encode, '/' encoded too), sorted by name then
// value, joined with '&'; a parameter without a value still ends in '='.
std::string canonical_query(const std::vector<std::pair<std::string, std::string>>& query);

// `amz_date` is ISO 8601 basic UTC ("20130524T000000Z"); its first 8 characters make the scope's date.
sigv4_parts sigv4_sign(const s3_request_to_sign& req, const s3_credentials& creds, std::string_view region,
                       std::string_view amz_date, std::string_view service = "s3");

// The signing key HMAC chain ("AWS4" + secret, date, region, service, "aws4_request"): 32 raw bytes.
std::string sigv4_signing_key(std::string_view secret, std::string_view date8, std::string_view region,
                              std::string_view service);

// "20130524T000000Z" for a Unix time in seconds.
std::string amz_date_from_unix(std::int64_t unix_seconds);

// Adds host, x-amz-date, x-amz-content-sha256 (and x-amz-security-token with a session token) to
// req.headers, signs, and adds the Authorization header: req.headers is then what to send.
sigv4_parts sign_request(s3_request_to_sign& req, const s3_credentials& creds, std::string_view region,
                         std::string_view host, std::string_view amz_date);

}  // namespace weir::tier

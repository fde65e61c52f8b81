// cold_location: where the cold tier's objects go, from `--cold s3://BUCKET/PREFIX`, `--s3-region` and
// `--s3-endpoint URL`, and how a request for one key is addressed:
//   * with an endpoint (MinIO, Ceph RGW, s3rver, any S3-compatible server): path-style,
//     ENDPOINT/BUCKET/PREFIX/KEY, Host = the endpoint's host[:port];
//   * without (AWS): virtual-hosted style, https://BUCKET.s3.REGION.amazonaws.com/PREFIX/KEY.
// Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (or from the
// settings file, which the app reads); they are never printed.
//
// Pure values and functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "tier/s3_signer.h"

namespace weir::tier {

struct cold_location {
  std::string bucket;
  std::string prefix;  // no leading or trailing '/'; may be empty
};

// "s3://BUCKET" or "s3://BUCKET/PREFIX[/]". The bucket follows S3's naming rules (3-63 characters of
// a-z 0-9 . -, starting and ending with a letter or digit); the prefix may not contain "//", "." or ".."
// segments, or control characters.
result<cold_location> parse_cold_location(std::string_view uri);

// An endpoint URL "http[s]://HOST[:PORT][/]"; nothing after the authority.
struct s3_endpoint {
  std::string scheme;     // "http" or "https"
  std::string authority;  // "127.0.0.1:4568" (the Host header; the port only when given)
};
result<s3_endpoint> parse_s3_endpoint(std::string_view url);

struct s3_settings {
  cold_location location;
  std::string region = "us-east-1";
  std::optional<s3_endpoint> endpoint;  // set: path-style; unset: AWS virtual-hosted style
  s3_credentials credentials;
};

// Reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (unset ones stay empty).
s3_credentials credentials_from_environment();

// How to send one request: the URL for curl and the pieces the signer needs.
struct s3_address {
  std::string url;   // scheme://host/path[?query], the query encoded as in the signature
  std::string host;  // the Host header
  std::string path;  // the encoded path, as signed
};
// `key` is relative to the location's prefix (full_key adds it); an empty key addresses the bucket (for
// ListObjectsV2). `query` is raw; it is encoded here exactly as canonical_query() encodes it.
s3_address address_for(const s3_settings& s, std::string_view key,
                       const std::vector<std::pair<std::string, std::string>>& query = {});
// PREFIX/key (or key when the prefix is empty).
std::string full_key(const cold_location& loc, std::string_view key);
// "s3://bucket/prefix (region r, endpoint e, key id AKIA...)": for logs; never the secret or the token.
std::string describe(const s3_settings& s);

}  // namespace weir::tier

// authorizer: the access decision for one HTTP request (docs/security.md). Built once at start from
// the settings; check() runs on the connection's core before the request goes anywhere else:
//   1. the bearer token, from `Authorization: Bearer` or (GET only) the `access_token` query parameter,
//      which is then stripped from the request;
//   2. which operation on which path the request needs (classify());
//   3. authentication: an API key (SHA-256, hash-table lookup, constant-time compare) or a JWT (a
//      signature check on the first use, then the core's token_cache until exp);
//   4. authorization: the token's scope must cover the path for the operation.
// Refusals are protocol::errc values (token_missing, token_invalid, token_request_invalid,
// access_denied) mapped to 400/401/403 with WWW-Authenticate in protocol/errors.cc, the one place where
// errors become statuses; the detail is a short static text about the token, never the token.
//
// Threads: check() on any core (core index < cores), each core using its own cache; reload_jwks() on any
// thread (the key set is swapped under a mutex and a generation invalidates every core's cache).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "auth/api_key.h"
#include "auth/crypto.h"
#include "auth/jwks.h"
#include "auth/jwt.h"
#include "auth/scope.h"
#include "auth/token_cache.h"
#include "base/result.h"
#include "http/exchange.h"
#include "protocol/errors.h"

namespace weir::auth {

struct auth_settings {
  std::vector<api_key> api_keys;
  std::string jwks_file;  // "": no JWTs
  jwt_policy jwt;
  // A token in the query must be a JWT that expires within this many seconds; 0: no query tokens.
  std::int64_t query_token_max_ttl_s = 600;
};

// The name of the query parameter that carries a token for a browser's EventSource (RFC 6750 2.3).
inline constexpr std::string_view query_token_name = "access_token";

// What a request needs (see classify()).
struct access_need {
  enum class kind : std::uint8_t {
    open,           // no token: /healthz, preflights, the subscription JWKS and the subscription
                    // callback/ack/release requests (which carry their own signed tokens, PROTOCOL.md 12.9)
    authenticated,  // any valid token (an unknown method: the stream parser then answers 405)
    scoped,         // `needed` on `path`, and read on `fork_source` when it is set
    bad_path,       // the path cannot be decoded or has `.`/`..` segments: 400 once authenticated
  };
  kind what = kind::scoped;
  op needed = op::read;
  std::string path;  // canonical (decoded)
  std::optional<std::string> fork_source;
};
access_need classify(const http::request& req);

// The request a handler sees after its query token was removed: a copy of the head whose target and
// query are the request's without `access_token` parameters. Neither movable nor copyable (its head
// points into its own strings).
class stripped_request {
 public:
  stripped_request(const http::request& req, std::string query);
  stripped_request(const stripped_request&) = delete;
  stripped_request& operator=(const stripped_request&) = delete;
  const http::request& get() const { return req_; }

 private:
  std::string query_;
  std::string target_;
  http::request_head head_;
  http::request req_;
};

// Sets `stripped` when `req` has access_token query parameters (used when auth is off, so that a
// token a browser sends anyway is not kept either). True when it did.
bool strip_query_token(const http::request& req, std::optional<stripped_request>& stripped);

struct decision {
  protocol::errc error = protocol::errc::ok;  // ok: go on
  std::string_view detail;                    // static text for the client
};

class authorizer {
 public:
  // Loads the JWKS file when one is configured. Errors: the file cannot be read or parsed, or a JWKS
  // file without an issuer and an audience to check.
  static result<std::unique_ptr<authorizer>> create(auth_settings settings, unsigned cores);

  // The decision for `req` on core `core` at wall time `now_ms`. When the request carried a query
  // token, `stripped` is set to the request without it: the caller must go on with stripped->get().
  decision check(const http::request& req, unsigned core, std::int64_t now_ms,
                 std::optional<stripped_request>& stripped);

  // Re-reads the JWKS file (SIGHUP). On an error the previous keys stay in force.
  status reload_jwks();
  std::size_t jwks_key_count() const;
  token_cache& cache(unsigned core) { return *caches_[core]; }

 private:
  explicit authorizer(auth_settings settings, unsigned cores);

  struct authenticated {
    const scope* granted = nullptr;
    std::shared_ptr<const scope> hold;  // keeps a JWT's scope alive for the call
  };
  result<authenticated> authenticate(std::string_view token, bool from_query, unsigned core,
                                     std::int64_t now_s);

  auth_settings settings_;
  std::unordered_multimap<std::uint64_t, std::size_t> keys_by_hash_;  // first 8 bytes -> api_keys index
  mutable std::mutex jwks_mu_;
  std::shared_ptr<const key_set> jwks_;  // guarded by jwks_mu_
  std::atomic<std::uint64_t> jwks_generation_{1};
  std::vector<std::unique_ptr<token_cache>> caches_;  // one per core
};

}  // namespace weir::auth

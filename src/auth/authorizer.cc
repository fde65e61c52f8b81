#include "auth/authorizer.h"

#include <cstring>

#include "protocol/header_values.h"

namespace weir::auth {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return http::ascii_iequals(a, b);
}

// RFC 6750 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
bool valid_b64token(std::string_view t) {
  std::size_t i = 0;
  for (; i < t.size(); ++i) {
    char c = t[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
    if (!ok) break;
  }
  if (i == 0) return false;
  for (; i < t.size(); ++i) {
    if (t[i] != '=') return false;
  }
  return true;
}

// A compact JWS has exactly two dots; API keys have any other number (weir's have none).
bool looks_like_jwt(std::string_view t) {
  std::size_t dots = 0;
  for (char c : t) dots += c == '.';
  return dots == 2;
}

std::uint64_t bucket_of(const digest& d) {
  std::uint64_t b;
  std::memcpy(&b, d.data(), sizeof b);
  return b;
}

decision refuse(protocol::errc e, std::string_view detail) {
  return {e, detail};
}

std::string_view not_granted(op o) {
  switch (o) {
    case op::read:
      return "the token does not grant read on this path";
    case op::write:
      return "the token does not grant write on this path";
    case op::remove:
      return "the token does not grant delete on this path";
    case op::admin:
      return "the token does not grant admin on this path";
  }
  return "not allowed";
}

// The tokens a request carries and the query without them.
struct carried_tokens {
  std::optional<std::string_view> header;
  std::optional<std::string> query;  // decoded value
  std::string rest_of_query;         // raw, without access_token parameters
  int header_count = 0;
  int query_count = 0;
};

carried_tokens find_tokens(const http::request& req, std::string_view& scheme_error) {
  carried_tokens out;
  for (const http::header& h : req.headers()) {
    if (!iequals(h.name, "authorization")) continue;
    ++out.header_count;
    std::string_view v = h.value;
    // RFC 6750 2.1: "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 11.1).
    if (v.size() > 7 && iequals(v.substr(0, 6), "bearer") && v[6] == ' ') {
      v.remove_prefix(7);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      out.header = v;
    } else {
      scheme_error = "use Authorization: Bearer <token>";
    }
  }
  std::string_view q = req.query();
  // Without the text "token" and without escapes no parameter can be called access_token.
  if (q.find("token") == std::string_view::npos && q.find('%') == std::string_view::npos) {
    return out;  // rest_of_query is used only when a token was found
  }
  while (!q.empty()) {
    std::size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    std::size_t eq = pair.find('=');
    auto name = protocol::percent_decode(pair.substr(0, eq), true);
    if (name && *name == query_token_name) {
      ++out.query_count;
      auto value = protocol::percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
      out.query = value ? std::move(*value) : std::string();
      continue;
    }
    if (!out.rest_of_query.empty()) out.rest_of_query += '&';
    out.rest_of_query += pair;
  }
  return out;
}

bool is_callback_route(std::string_view rest) {
  // subscriptions/:id/callback | ack | release (PROTOCOL.md 6, 12.9: their own Bearer tokens).
  constexpr std::string_view subs = "subscriptions/";
  if (rest.substr(0, subs.size()) != subs) return false;
  rest.remove_prefix(subs.size());
  std::size_t slash = rest.find('/');
  if (slash == 0 || slash == std::string_view::npos) return false;
  std::string_view tail = rest.substr(slash + 1);
  return tail == "callback" || tail == "ack" || tail == "release";
}

}  // namespace

access_need classify(const http::request& req) {
  access_need need;
  const http::method m = req.method();
  const std::string_view raw = req.path();
  if (m == http::method::options) {
    need.what = access_need::kind::open;
    return need;
  }
  std::optional<std::string> path = canonical_path(raw);
  if (!path) {
    need.what = access_need::kind::bad_path;
    return need;
  }
  need.path = std::move(*path);
  std::string_view root, rest;
  if (protocol::split_reserved_path(raw, root, rest)) {
    const bool jwks = rest == "jwks.json" && (m == http::method::get || m == http::method::head);
    if (jwks || (m == http::method::post && is_callback_route(rest))) {
      need.what = access_need::kind::open;
    } else {
      need.needed = op::admin;
    }
    return need;
  }
  if (need.path == "/healthz" && (m == http::method::get || m == http::method::head)) {
    need.what = access_need::kind::open;
    return need;
  }
  if (protocol::is_server_path(need.path)) {
    need.needed = op::admin;  // /metrics, cluster and status endpoints
    return need;
  }
  switch (m) {
    case http::method::get:
    case http::method::head:
      need.needed = op::read;
      break;
    case http::method::put:
      need.needed = op::write;
      if (const http::header* from = req.find("stream-forked-from")) {
        // A fork reads its source: the token must be allowed to read it too.
        auto source = canonical_path(from->value);
        if (!source) {
          need.what = access_need::kind::bad_path;
          return need;
        }
        need.fork_source = std::move(*source);
      }
      break;
    case http::method::post:
      need.needed = op::write;
      break;
    case http::method::del:
      need.needed = op::remove;
      break;
    default:
      need.what = access_need::kind::authenticated;
      break;
  }
  return need;
}

stripped_request::stripped_request(const http::request& req, std::string query)
    : query_(std::move(query)), head_(*req.head) {
  target_ = std::string(req.path());
  if (!query_.empty()) target_ += "?" + query_;
  head_.query = query_;
  head_.target = target_;
  req_.head = &head_;
  req_.body = req.body;
}

bool strip_query_token(const http::request& req, std::optional<stripped_request>& stripped) {
  std::string_view unused;
  carried_tokens tokens = find_tokens(req, unused);
  if (tokens.query_count == 0) return false;
  stripped.emplace(req, std::move(tokens.rest_of_query));
  return true;
}

authorizer::authorizer(auth_settings settings, unsigned cores) : settings_(std::move(settings)) {
  for (std::size_t i = 0; i < settings_.api_keys.size(); ++i) {
    keys_by_hash_.emplace(bucket_of(settings_.api_keys[i].hash), i);
  }
  for (unsigned i = 0; i < cores; ++i) caches_.push_back(std::make_unique<token_cache>());
}

result<std::unique_ptr<authorizer>> authorizer::create(auth_settings settings, unsigned cores) {
  if (!settings.jwks_file.empty() && (settings.jwt.issuer.empty() || settings.jwt.audience.empty())) {
    return make_error(jwks_errc::bad_key,
                      "jwks-file needs jwt-issuer and jwt-audience (the iss and aud JWTs must carry)");
  }
  std::unique_ptr<authorizer> a(new authorizer(std::move(settings), cores));
  if (!a->settings_.jwks_file.empty()) {
    auto keys = load_jwks_file(a->settings_.jwks_file);
    if (!keys) return keys.err();
    a->jwks_ = std::move(*keys);
  }
  return a;
}

status authorizer::reload_jwks() {
  if (settings_.jwks_file.empty()) return {};
  auto keys = load_jwks_file(settings_.jwks_file);
  if (!keys) return keys.err();
  {
    std::lock_guard lock(jwks_mu_);
    jwks_ = std::move(*keys);
  }
  jwks_generation_.fetch_add(1, std::memory_order_acq_rel);  // after the swap: see authenticate()
  return {};
}

std::size_t authorizer::jwks_key_count() const {
  std::lock_guard lock(jwks_mu_);
  return jwks_ ? jwks_->by_kid.size() : 0;
}

result<authorizer::authenticated> authorizer::authenticate(std::string_view token, bool from_query,
                                                           unsigned core, std::int64_t now_s) {
  if (token.size() > max_token_bytes) return make_error(token_error::too_long);
  const digest h = sha256(token);
  if (!looks_like_jwt(token)) {
    if (from_query) return make_error(token_error::malformed);  // API keys never travel in URLs
    auto [first, last] = keys_by_hash_.equal_range(bucket_of(h));
    for (auto it = first; it != last; ++it) {
      const api_key& k = settings_.api_keys[it->second];
      if (equal_constant_time(k.hash, h)) return authenticated{&k.granted, nullptr};
    }
    return make_error(token_error::unknown_api_key);
  }
  if (settings_.jwks_file.empty()) return make_error(token_error::jwt_not_configured);
  // The generation is read before the keys, and reload_jwks() bumps it after swapping them: an entry
  // made from keys that a reload replaced is stale at once, and a cache hit takes no lock.
  const std::uint64_t generation = jwks_generation_.load(std::memory_order_acquire);
  token_cache& cache = *caches_[core];
  const std::int64_t leeway = settings_.jwt.leeway_s;
  std::shared_ptr<const scope> granted;
  std::int64_t exp = 0;
  if (const token_cache::entry* e = cache.find(h, now_s, leeway, generation)) {
    granted = e->granted;
    exp = e->exp;
  } else {
    std::shared_ptr<const key_set> keys;
    {
      std::lock_guard lock(jwks_mu_);
      keys = jwks_;
    }
    auto claims = verify_jwt(token, *keys, settings_.jwt, now_s);
    if (!claims) return claims.err();
    granted = claims->granted;
    exp = claims->exp;
    cache.insert(h, {granted, exp, generation}, now_s, leeway);
  }
  if (from_query && exp - now_s > settings_.query_token_max_ttl_s) return make_error(token_error::malformed);
  const scope* s = granted.get();
  return authenticated{s, std::move(granted)};
}

decision authorizer::check(const http::request& req, unsigned core, std::int64_t now_ms,
                           std::optional<stripped_request>& stripped) {
  using protocol::errc;
  std::string_view scheme_error;
  carried_tokens tokens = find_tokens(req, scheme_error);
  if (tokens.query_count > 0) stripped.emplace(req, std::move(tokens.rest_of_query));
  // Open requests (preflights, /healthz, the subscription callbacks) are not judged at all, whatever
  // they carry: a preflight repeats the URL of the request it asks for, query token included.
  const access_need need = classify(req);
  if (need.what == access_need::kind::open) return {};
  if (tokens.header_count > 1 || tokens.query_count > 1) {
    return refuse(errc::token_request_invalid, "send one bearer token");
  }
  if (tokens.header && tokens.query) {
    return refuse(errc::token_request_invalid,
                  "send the token in the Authorization header or the query, not both");
  }
  if (tokens.query && req.method() != http::method::get) {
    return refuse(errc::token_request_invalid, "a token in the query (access_token) is accepted on GET only");
  }
  if (tokens.query && settings_.query_token_max_ttl_s == 0) {
    return refuse(errc::token_request_invalid, "tokens in the query are disabled on this server");
  }
  std::optional<std::string_view> token = tokens.header;
  if (tokens.query) token = std::string_view(*tokens.query);
  if (!token) {
    return refuse(errc::token_missing, scheme_error.empty() ? "bearer token required" : scheme_error);
  }
  if (!valid_b64token(*token)) return refuse(errc::token_invalid, token_error_text(token_error::malformed));
  auto who = authenticate(*token, tokens.query.has_value(), core, now_ms / 1000);
  if (!who) {
    const auto e = who.err().as<token_error>();
    if (tokens.query && (e == token_error::malformed || e == token_error::unknown_api_key)) {
      return refuse(errc::token_invalid,
                    "a token in the query must be a JWT that expires soon (query-token-max-ttl-s)");
    }
    return refuse(errc::token_invalid, token_error_text(e));
  }
  switch (need.what) {
    case access_need::kind::open:
    case access_need::kind::authenticated:
      return {};
    case access_need::kind::bad_path:
      return refuse(errc::bad_path, {});
    case access_need::kind::scoped:
      break;
  }
  if (!who->granted->allows(need.path, need.needed))
    return refuse(errc::access_denied, not_granted(need.needed));
  if (need.fork_source && !who->granted->allows(*need.fork_source, op::read)) {
    return refuse(errc::access_denied, "the token does not grant read on the fork's source");
  }
  return {};
}

}  // namespace weir::auth

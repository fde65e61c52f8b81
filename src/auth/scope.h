// scope: what a token may do. A scope is a list of rules, each a path prefix and the operations allowed
// under it; a request is allowed when one rule covers both its path and its operation. Pure values,
// immutable once built: shared between cores by shared_ptr<const scope>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::auth {

// The operations a rule grants (docs/security.md has the table of which request needs which).
enum class op : std::uint8_t {
  read = 1,    // GET, HEAD, long-poll, SSE
  write = 2,   // PUT (create), POST (append, close)
  remove = 4,  // DELETE ("delete" in the config)
  admin = 8,   // subscriptions under __ds, the server's own paths (/metrics, cluster and status)
};
using op_set = std::uint8_t;

// "read", "write", "delete", "admin"; nullopt for another name.
std::optional<op> op_from_name(std::string_view name);
std::string_view op_name(op o);

struct scope_rule {
  // A decoded, absolute path without `.`/`..` segments. It covers itself and what lies below it at a
  // segment boundary (`/v1/stream/a` covers `/v1/stream/a` and `/v1/stream/a/x`, never
  // `/v1/stream/ab`); a prefix ending in '/' covers what starts with it. With `any_suffix` (written
  // `/v1/stream/tenant-*`) it covers every path that starts with the text before the '*'.
  std::string prefix;
  bool any_suffix = false;
  op_set ops = 0;
};

struct scope {
  std::vector<scope_rule> rules;
  // True when a rule covers `canonical_path` (see canonical_path()) for operation `o`.
  bool allows(std::string_view canonical_path, op o) const;
};

// A rule's prefix as written in the config or a token ("/v1/stream/a", "/v1/stream/t-*"): "" and the
// rule, or what is wrong. Prefixes are written decoded: no '%', no control characters, no `.`/`..`.
std::string parse_prefix(std::string_view text, scope_rule& rule);

// The path a request acts on, as prefixes are matched against it: the request path percent-decoded
// (RFC 3986 2.1). nullopt when it cannot be decoded or has `.`/`..` segments, raw or encoded, or
// control characters (the stream parser refuses the same paths, protocol::check_stream_path), so an
// escape can neither hide a traversal nor leave a prefix.
std::optional<std::string> canonical_path(std::string_view raw_path);

// The `scope` claim of a JWT: space-separated items `OPS:PREFIX` where OPS is a comma-separated list of
// operation names ("read,write:/v1/stream/a admin:/"). Items of another form (other applications'
// scopes such as "openid") and items naming unknown operations or invalid prefixes are ignored: they
// grant nothing.
scope parse_scope_claim(std::string_view claim);

}  // namespace weir::auth

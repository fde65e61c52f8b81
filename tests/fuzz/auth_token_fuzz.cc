// libFuzzer target for what access control decodes from a client or a file (src/auth): a bearer token
// checked as a JWT (base64url, JOSE header and claims JSON, key lookup) against a fixed key set, the
// same bytes as a JWKS document, a scope claim, and a request path to canonicalise. Nothing may crash,
// and a canonical path never keeps a dot segment.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "auth/jwks.h"
#include "auth/jwt.h"
#include "auth/scope.h"

namespace {

const weir::auth::key_set& keys() {
  // RFC 8037 A.2's Ed25519 public key, and an RSA key's kid with no key behind the same name.
  static const auto set = weir::auth::parse_jwks(
      R"({"keys":[{"kty":"OKP","crv":"Ed25519","kid":"ed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]})");
  if (!set) std::abort();
  return **set;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  weir::auth::jwt_policy policy{"https://issuer.test", "weir", 30};
  (void)weir::auth::verify_jwt(in, keys(), policy, 1'700'000'000);
  (void)weir::auth::parse_jwks(in);
  weir::auth::scope s = weir::auth::parse_scope_claim(in);
  for (const auto& r : s.rules) {
    if (r.prefix.empty() || r.prefix.front() != '/') std::abort();
  }
  if (auto p = weir::auth::canonical_path(in)) {
    if (p->find("/../") != std::string::npos || p->ends_with("/..") || p->find("/./") != std::string::npos) {
      std::abort();
    }
  }
  return 0;
}

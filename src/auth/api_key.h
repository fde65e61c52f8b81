// api_key: a static API key as configured ([[auth.api-keys]], docs/security.md): the SHA-256 of the key,
// never the key, and the scope it grants. A plain value (serve_config holds a list of them).
#pragma once

#include <string>

#include "auth/crypto.h"
#include "auth/scope.h"

namespace weir::auth {

struct api_key {
  std::string name;  // a label for the operator (--print-config); never the key
  digest hash{};     // SHA-256 of the key as the client sends it after "Bearer "
  scope granted;
};

// A new random key ("wk_" + 43 base64url characters: 256 bits), for `weir auth gen-key`.
std::string generate_api_key();

}  // namespace weir::auth

// token_cache: the JWTs one core has verified, so that a long-lived client pays one signature check per
// token rather than one per request. Keyed by the SHA-256 of the token (the token itself is not kept);
// an entry holds the granted scope until the token's exp (plus leeway) and only for the key set it was
// verified with (a JWKS reload invalidates every entry). One per core; not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "auth/crypto.h"
#include "auth/scope.h"

namespace weir::auth {

class token_cache {
 public:
  explicit token_cache(std::size_t capacity = 4096) : capacity_(capacity) {}

  struct entry {
    std::shared_ptr<const scope> granted;
    std::int64_t exp = 0;  // Unix seconds
    std::uint64_t key_generation = 0;
  };

  // The entry of `token_hash` if it is still good at `now_s` for `key_generation`, else null (and a
  // stale entry is dropped).
  const entry* find(const digest& token_hash, std::int64_t now_s, std::int64_t leeway_s,
                    std::uint64_t key_generation);
  void insert(const digest& token_hash, entry e, std::int64_t now_s, std::int64_t leeway_s);
  std::size_t size() const { return map_.size(); }

 private:
  struct digest_hash {
    std::size_t operator()(const digest& d) const {
      std::size_t h;
      std::memcpy(&h, d.data(), sizeof h);  // a SHA-256 is uniform: its first bytes are a fine hash
      return h;
    }
  };
  std::size_t capacity_;
  std::unordered_map<digest, entry, digest_hash> map_;
};

}  // namespace weir::auth

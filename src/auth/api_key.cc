#include "auth/api_key.h"

namespace weir::auth {

std::string generate_api_key() {
  return "wk_" + base64url_encode(random_bytes(32));
}

}  // namespace weir::auth

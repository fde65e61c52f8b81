#include "auth/listen_policy.h"

#include <arpa/inet.h>

#include <cstring>

namespace weir::auth {

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  std::string h(host);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    static const unsigned char loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(v6.s6_addr, loopback, 16) == 0) return true;
    return std::memcmp(v6.s6_addr, mapped, 12) == 0 && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string listen_refusal(std::string_view host, bool auth_configured, bool insecure_no_auth) {
  if (auth_configured || insecure_no_auth || is_loopback_host(host)) return "";
  return "refusing to listen on " + std::string(host) +
         " without access control: anyone who reaches the port could create, append to and delete every "
         "stream. Configure API keys ([[auth.api-keys]] in the config file) or JWTs (--jwks-file, "
         "--jwt-issuer, --jwt-audience), listen on a loopback address, or pass --insecure-no-auth to accept "
         "every client (docs/security.md)";
}

}  // namespace weir::auth

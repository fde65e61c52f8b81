// listen_policy: whether a node may run without access control. Off is allowed only on a loopback
// address (where only local processes reach it); anywhere else it takes --insecure-no-auth. Pure.
#pragma once

#include <string>
#include <string_view>

namespace weir::auth {

// 127.0.0.0/8, ::1, ::ffff:127.x.y.z and the name "localhost". Anything else (0.0.0.0, ::, other
// addresses, other names) is not: a name may resolve anywhere.
bool is_loopback_host(std::string_view host);

// "" when a node listening on `host` may start; else why it may not, for the start-up error.
std::string listen_refusal(std::string_view host, bool auth_configured, bool insecure_no_auth);

}  // namespace weir::auth

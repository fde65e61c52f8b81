#include "protocol/cors.h"

#include "protocol/header_values.h"

namespace weir::protocol {

namespace {

// Items of a non-empty comma-separated list (an empty one too: "a,,b" and "a," have one), spaces
// around each trimmed.
template <class F>
void for_each_item(std::string_view list, F&& f) {
  if (list.empty()) return;
  while (true) {
    std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    f(item);
    if (comma == std::string_view::npos) return;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

cors_policy::cors_policy(std::string_view comma_separated) {
  for_each_item(comma_separated, [this](std::string_view o) {
    if (!o.empty()) origins_.emplace_back(o);
  });
}

cors_grant cors_policy::grant(std::optional<std::string_view> origin) const {
  cors_grant g;
  g.vary = !origins_.empty();
  if (!origin) return g;
  // RFC 6454 6.1: a browser serializes an origin as scheme://host[:port] in lower case, so the
  // comparison is exact.
  for (const std::string& o : origins_) {
    if (o == *origin) {
      g.origin = o;
      break;
    }
  }
  return g;
}

std::string check_cors_origins(std::string_view list) {
  std::optional<std::string> bad;
  for_each_item(list, [&bad](std::string_view o) {
    if (!bad && !valid_origin(o)) bad = std::string(o);
  });
  if (!bad) return "";
  return "origins http(s)://HOST[:PORT] without a path, separated by commas, got '" + *bad + "'";
}

void add_cors_headers(response& r, const cors_grant& g) {
  if (g.origin.empty()) {
    r.add_static("Access-Control-Allow-Origin", "*");
  } else {
    r.add("Access-Control-Allow-Origin", g.origin);
    r.add_static("Access-Control-Allow-Credentials", "true");
  }
  // RFC 9110 12.5.5: a cache must not hand one origin's answer to another.
  if (g.vary) r.add_static("Vary", "Origin");
}

}  // namespace weir::protocol

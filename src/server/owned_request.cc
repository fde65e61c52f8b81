#include "server/owned_request.h"

namespace weir::server {

owned_request::owned_request(const http::request& r) {
  const http::request_head& h = *r.head;
  std::size_t total = h.method_name.size() + h.target.size() + r.body.size();
  for (std::size_t i = 0; i < h.header_count; ++i)
    total += h.headers[i].name.size() + h.headers[i].value.size();
  storage_.reserve(total);  // no reallocation below: the views stay valid
  auto keep = [this](std::string_view s) {
    std::size_t at = storage_.size();
    storage_.append(s);
    return std::string_view(storage_).substr(at, s.size());
  };
  head_ = h;  // scalars; the views are redirected below
  head_.method_name = keep(h.method_name);
  head_.target = keep(h.target);
  // path and query are parts of the target.
  auto rebase = [&](std::string_view part) {
    if (part.empty()) return std::string_view();
    std::size_t off = static_cast<std::size_t>(part.data() - h.target.data());
    if (part.data() < h.target.data() || off + part.size() > h.target.size()) return std::string_view();
    return head_.target.substr(off, part.size());
  };
  head_.path = rebase(h.path);
  head_.query = rebase(h.query);
  for (std::size_t i = 0; i < h.header_count; ++i) {
    head_.headers[i].name = keep(h.headers[i].name);
    head_.headers[i].value = keep(h.headers[i].value);
  }
  req_.head = &head_;
  req_.body = keep(r.body);
}

}  // namespace weir::server

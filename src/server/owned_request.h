// owned_request: a deep copy of an http::request (head views and body), so a request can be handed to
// another core (the engine's views are only valid during the handler call).
#pragma once

#include <memory>
#include <string>

#include "http/exchange.h"

namespace weir::server {

class owned_request {
 public:
  explicit owned_request(const http::request& r);
  owned_request(const owned_request&) = delete;
  owned_request& operator=(const owned_request&) = delete;

  const http::request& get() const { return req_; }

 private:
  std::string storage_;  // every string of the head, then the body; the views below point into it
  http::request_head head_;
  http::request req_;
};

}  // namespace weir::server

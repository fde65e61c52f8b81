// object_store: the interface of the place where the cold tier keeps its objects (docs/cold-tier.md). Two
// implementations: s3_object_store (S3 over libcurl) and mem_object_store (an in-memory fake that injects
// faults, for unit tests and the cluster simulation). retrying_object_store wraps either with the retry
// policy, and async_object_store runs any of them on worker threads for callers on event loops.
//
// The interface is blocking on purpose: one call is one request (or one fake step), which keeps the fake
// and the S3 client simple and lets the retry policy be a decorator tested over the fake. Only worker
// threads call it (async_object_store's, or a test's): never an event loop, never a disk read thread.
//
// Keys are relative to the store's own location (an S3 store prepends its prefix and strips it from the
// keys that list() returns), so the fake and S3 answer the same keys.
//
// Objects are written whole by one PUT of at most max_object_bytes (80 MiB): no multipart upload, so no
// upload to abort and nothing that s3rver lacks (docs/cold-tier.md, "What the test server cannot check").
// Most objects are near the uploader's target (8 MiB); the cap leaves room for the largest record (64 MiB,
// storage::format::max_record_payload), which a JSON stream's object holds whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/assert.h"
#include "base/result.h"

namespace weir::tier {

// What went wrong with one request, as far as a caller needs to decide what to do.
enum class store_errc {
  not_found = 1,        // 404 NoSuchKey / NoSuchBucket
  precondition_failed,  // 412 (If-None-Match: * on a key that exists)
  conflict,             // 409 (a concurrent conditional write)
  throttled,            // 503 SlowDown, 429: retry later, slower
  server_error,         // other 5xx: retry
  timeout,              // no (complete) answer in time: the request may or may not have been applied
  connection,           // connect failure, reset, short body: the request may or may not have been applied
  auth,                 // 401/403: wrong credentials, clock skew, a signature mismatch
  bad_range,            // 416: the range starts past the end of the object
  invalid,              // the caller's request cannot be sent (too large, empty key)
  other,                // any other answer (400, 405, an unparsable reply)
};

const char* to_string(store_errc e);

// The kinds that a retry may cure: throttling, 5xx, timeouts and resets. Never 4xx otherwise: a retry would
// get the same answer.
constexpr bool is_retryable(store_errc e) {
  return e == store_errc::throttled || e == store_errc::server_error || e == store_errc::timeout ||
         e == store_errc::connection;
}
// The kinds after which a write's outcome is unknown (it may have been applied): such a write is never
// followed by a delete, and its key is never reused with other bytes (docs/cold-tier.md, "Keys").
constexpr bool is_ambiguous(store_errc e) {
  return e == store_errc::timeout || e == store_errc::connection || e == store_errc::server_error;
}

struct store_error {
  store_errc kind = store_errc::other;
  int http_status = 0;  // 0: no HTTP answer (timeout, connection)
  std::string code;     // S3's <Code> (NoSuchKey, SlowDown, ...) when the answer had one
  std::string message;  // short text for logs and 503 reasons; never a credential
  int attempts = 1;     // requests sent for this call (retrying_object_store)

  // "not_found (404 NoSuchKey): message", for logs and reasons.
  std::string describe() const;
  // As a module-agnostic weir::error (code = store_errc).
  weir::error to_error() const { return make_error(kind, describe()); }
};

inline store_error make_store_error(store_errc kind, std::string message, int http_status = 0,
                                    std::string code = {}) {
  return store_error{kind, http_status, std::move(code), std::move(message)};
}

// A value or a store_error.
template <class T>
class [[nodiscard]] store_result {
 public:
  store_result(T value) : v_(std::in_place_index<0>, std::move(value)) {}    // NOLINT: implicit by design
  store_result(store_error e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT: implicit by design

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & {
    WEIR_ASSERT(has_value(), "store_result::value() on error: {}", std::get<1>(v_).describe());
    return std::get<0>(v_);
  }
  const T& value() const& {
    WEIR_ASSERT(has_value(), "store_result::value() on error: {}", std::get<1>(v_).describe());
    return std::get<0>(v_);
  }
  T&& value() && {
    WEIR_ASSERT(has_value(), "store_result::value() on error: {}", std::get<1>(v_).describe());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const store_error& err() const {
    WEIR_ASSERT(!has_value(), "store_result::err() on a value");
    return std::get<1>(v_);
  }
  store_error& err() {
    WEIR_ASSERT(!has_value(), "store_result::err() on a value");
    return std::get<1>(v_);
  }

 private:
  std::variant<T, store_error> v_;
};

struct store_done {};  // the value of a call that returns nothing

using object_bytes = std::vector<std::byte>;
// An object's bytes held by whoever still needs them (the uploader until the store has them, the worker
// thread sending them): a retry or a hand-off to another thread shares them, never copies them.
using shared_object_bytes = std::shared_ptr<const object_bytes>;

struct object_info {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;  // as the store gave it, quotes removed
};

struct range_read {
  object_bytes bytes;             // from the asked offset; shorter than asked only at the end of the object
  std::uint64_t object_size = 0;  // the whole object's size (Content-Range's total)
};

struct list_page {
  std::vector<object_info> objects;  // in key order
  std::string next_token;            // pass to list() for the next page; empty when !truncated
  bool truncated = false;
};

struct put_options {
  // If-None-Match: * (412 precondition_failed when the key exists). Real S3 honours it; s3rver ignores it.
  // Weir never needs it for safety (a key is never written with other bytes); it is a check, not a lock.
  bool if_absent = false;
};

class object_store {
 public:
  static constexpr std::uint64_t max_object_bytes = 80ull << 20;
  static constexpr int max_list_keys = 1000;

  virtual ~object_store() = default;

  // All calls are blocking and thread-safe.
  // One PUT of the whole object (at most max_object_bytes, else `invalid`). A retry of the same key must
  // send the same bytes.
  virtual store_result<object_info> put(const std::string& key, std::span<const std::byte> bytes,
                                        put_options options = {}) = 0;
  // Bytes [offset, offset + length) of the object, cut at its end; length 0: to the end. An offset at or
  // past the end (of a non-empty object) is bad_range.
  virtual store_result<range_read> get_range(const std::string& key, std::uint64_t offset,
                                             std::uint64_t length) = 0;
  virtual store_result<object_info> head(const std::string& key) = 0;
  // One page of keys starting with `prefix`, in key order; `continuation` is a page's next_token ("" for
  // the first page). max_keys is at most max_list_keys.
  virtual store_result<list_page> list(const std::string& prefix, const std::string& continuation,
                                       int max_keys = max_list_keys) = 0;
  // Deleting a missing key succeeds (S3 answers 204 either way).
  virtual store_result<store_done> remove(const std::string& key) = 0;
};

}  // namespace weir::tier

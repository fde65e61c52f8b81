#include "tier/s3_object_store.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include <fmt/format.h>

#include "tier/s3_signer.h"
#include "tier/s3_xml.h"

namespace weir::tier {

struct s3_object_store::answer {
  int status = 0;
  object_bytes body;
  std::string etag;
  std::string content_range;  // "bytes 0-9/443"
  std::uint64_t content_length = 0;
  bool has_content_length = false;
};

namespace {

struct curl_global {
  curl_global() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

struct transfer {
  s3_object_store::answer* out = nullptr;
  const std::atomic<bool>* cancelled = nullptr;
  std::uint64_t body_limit = 0;
  bool overflow = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  std::size_t bytes = size * n;
  if (t->out->body.size() + bytes > t->body_limit) {
    t->overflow = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  auto* p = reinterpret_cast<const std::byte*>(data);
  t->out->body.insert(t->out->body.end(), p, p + bytes);
  return bytes;
}

bool header_is(std::string_view line, std::string_view name, std::string_view& value) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = line[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != name[i]) return false;
  }
  value = line.substr(name.size() + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  return true;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  std::string_view line(data, size * n);
  std::string_view v;
  if (line.substr(0, 5) == "HTTP/") {  // a new response (after a 100 Continue): forget the last one's
    t->out->etag.clear();
    t->out->content_range.clear();
    t->out->has_content_length = false;
  } else if (header_is(line, "etag", v)) {
    t->out->etag = std::string(v);
    if (t->out->etag.size() >= 2 && t->out->etag.front() == '"' && t->out->etag.back() == '"') {
      t->out->etag = t->out->etag.substr(1, t->out->etag.size() - 2);
    }
  } else if (header_is(line, "content-range", v)) {
    t->out->content_range = std::string(v);
  } else if (header_is(line, "content-length", v)) {
    std::uint64_t len = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), len);
    t->out->has_content_length = ec == std::errc{} && p == v.data() + v.size();
    t->out->content_length = len;
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<transfer*>(user)->cancelled->load(std::memory_order_relaxed) ? 1 : 0;
}

store_error curl_failure(CURLcode rc, const transfer& t) {
  std::string what = curl_easy_strerror(rc);
  if (rc == CURLE_OPERATION_TIMEDOUT) return make_store_error(store_errc::timeout, what);
  if (rc == CURLE_WRITE_ERROR && t.overflow) {
    return make_store_error(store_errc::other, "answer larger than the largest object");
  }
  if (rc == CURLE_ABORTED_BY_CALLBACK)
    return make_store_error(store_errc::connection, "cancelled (shutdown)");
  // Connect failures, resets, truncated bodies, TLS failures: the request may or may not have arrived.
  return make_store_error(store_errc::connection, what);
}

// "bytes A-B/TOTAL": TOTAL, or nullopt.
std::optional<std::uint64_t> content_range_total(std::string_view v) {
  std::size_t slash = v.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view total = v.substr(slash + 1);
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(total.data(), total.data() + total.size(), n);
  if (ec != std::errc{} || p != total.data() + total.size()) return std::nullopt;
  return n;
}

std::string body_text(const object_bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace

s3_store_metrics::s3_store_metrics()
    : put_latency_us(metrics::latency_us_bounds), get_latency_us(metrics::latency_us_bounds) {}

store_errc classify_s3_answer(int status, const std::string& code) {
  if (code == "SlowDown" || code == "Throttling" || code == "ThrottlingException" || status == 429 ||
      status == 503) {
    return store_errc::throttled;
  }
  // S3's 400 RequestTimeout: the server gave up waiting for the request's bytes; a retry may cure it.
  if (code == "RequestTimeout") return store_errc::timeout;
  if (status >= 500) return store_errc::server_error;
  switch (status) {
    case 401:
    case 403:
      return store_errc::auth;
    case 404:
      return store_errc::not_found;
    case 409:
      return store_errc::conflict;
    case 412:
      return store_errc::precondition_failed;
    case 416:
      return store_errc::bad_range;
    default:
      return store_errc::other;
  }
}

s3_object_store::s3_object_store(s3_settings settings, s3_client_options options)
    : settings_(std::move(settings)), options_(options) {
  static curl_global once;  // curl_global_init is not thread-safe: before any worker uses a handle
  (void)once;
  if (!options_.clock) options_.clock = &system_clock_;
}

s3_object_store::~s3_object_store() {
  for (void* h : idle_handles_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* s3_object_store::acquire_handle() {
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_handles_.empty()) {
      void* h = idle_handles_.back();
      idle_handles_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void s3_object_store::release_handle(void* h) {
  std::lock_guard lock(pool_mu_);
  idle_handles_.push_back(h);
}

store_result<s3_object_store::answer> s3_object_store::perform(const request& req) {
  if (cancelled_.load()) return make_store_error(store_errc::connection, "cancelled (shutdown)");
  CURL* h = static_cast<CURL*>(acquire_handle());
  if (!h) return make_store_error(store_errc::other, "curl_easy_init failed");
  curl_easy_reset(h);  // options only: the connection cache stays

  s3_address addr = address_for(settings_, req.key, req.query);
  s3_request_to_sign to_sign{req.method, addr.path, req.query, req.headers, payload_sha256_hex(req.body)};
  std::string amz_date = amz_date_from_unix(options_.clock->wall_ms() / 1000);
  sign_request(to_sign, settings_.credentials, settings_.region, addr.host, amz_date);

  curl_slist* headers = nullptr;
  for (const auto& [name, value] : to_sign.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  if (std::string_view(req.method) == "PUT") {
    headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
  }

  answer out;
  out.body.reserve(std::min<std::uint64_t>(req.expect_bytes, max_object_bytes));
  transfer t{&out, &cancelled_, max_object_bytes + 64 * 1024};
  curl_easy_setopt(h, CURLOPT_URL, addr.url.c_str());
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);  // the path is sent as signed (no dot-segment removal)
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (req.head) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (std::string_view(req.method) == "PUT") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, reinterpret_cast<const char*>(req.body.data()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  } else if (std::string_view(req.method) != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method);
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we are multi-threaded
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, options_.low_speed_bytes);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                   static_cast<long>(std::max<std::int64_t>(1, options_.low_speed_time.count() / 1000)));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_USERAGENT, "weir-cold-tier/1");

  auto started = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(h);
  auto micros = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started)
          .count());
  long status = 0;
  if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  release_handle(h);

  metrics_.requests.add_shared();
  if (std::string_view(req.method) == "PUT") metrics_.put_latency_us.observe_shared(micros);
  if (std::string_view(req.method) == "GET" && !req.key.empty())
    metrics_.get_latency_us.observe_shared(micros);
  if (rc != CURLE_OK) {
    metrics_.failures.add_shared();
    return curl_failure(rc, t);
  }
  out.status = static_cast<int>(status);
  if (status >= 300) {
    metrics_.failures.add_shared();
    std::string code;
    std::string message;
    if (auto e = parse_s3_error(body_text(out.body))) {
      code = std::move(e->code);
      message = std::move(e->message);
    }
    store_errc kind = classify_s3_answer(out.status, code);
    if (message.empty())
      message = fmt::format("{} {} answered {}", req.method, req.key.empty() ? "(bucket)" : req.key, status);
    return make_store_error(kind, std::move(message), out.status, std::move(code));
  }
  return out;
}

store_result<object_info> s3_object_store::put(const std::string& key, std::span<const std::byte> bytes,
                                               put_options options) {
  if (key.empty() || bytes.size() > max_object_bytes) {
    return make_store_error(store_errc::invalid, fmt::format("put of {} bytes to '{}'", bytes.size(), key));
  }
  request req;
  req.method = "PUT";
  req.key = key;
  req.body = bytes;
  if (options.if_absent) req.headers.emplace_back("If-None-Match", "*");
  auto a = perform(req);
  if (!a) return std::move(a.err());
  return object_info{key, bytes.size(), a->etag};
}

store_result<range_read> s3_object_store::get_range(const std::string& key, std::uint64_t offset,
                                                    std::uint64_t length) {
  if (key.empty()) return make_store_error(store_errc::invalid, "get of an empty key");
  request req;
  req.key = key;
  req.expect_bytes = length;
  // Only forward ranges (bytes=A-B, bytes=A-): never a suffix range, which s3rver answers wrongly.
  bool ranged = offset != 0 || length != 0;
  if (ranged) {
    std::string range = length == 0 ? fmt::format("bytes={}-", offset)
                                    : fmt::format("bytes={}-{}", offset, offset + length - 1);
    req.headers.emplace_back("Range", range);
  }
  auto a = perform(req);
  if (!a) return std::move(a.err());
  range_read out;
  if (a->status == 206) {
    auto total = content_range_total(a->content_range);
    if (!total) {
      return make_store_error(store_errc::other,
                              fmt::format("206 without a usable Content-Range '{}'", a->content_range), 206);
    }
    out.object_size = *total;
    out.bytes = std::move(a->body);
  } else {
    // 200: the whole object (no Range sent, or a server that ignores ranges): cut it here.
    out.object_size = a->body.size();
    if (ranged && offset >= out.object_size && out.object_size > 0) {
      return make_store_error(store_errc::bad_range, "range past the end of the object", 416);
    }
    std::uint64_t from = std::min<std::uint64_t>(offset, a->body.size());
    std::uint64_t n =
        length == 0 ? a->body.size() - from : std::min<std::uint64_t>(length, a->body.size() - from);
    out.bytes.assign(a->body.begin() + static_cast<std::ptrdiff_t>(from),
                     a->body.begin() + static_cast<std::ptrdiff_t>(from + n));
  }
  return out;
}

store_result<object_info> s3_object_store::head(const std::string& key) {
  if (key.empty()) return make_store_error(store_errc::invalid, "head of an empty key");
  request req;
  req.method = "HEAD";
  req.key = key;
  req.head = true;
  auto a = perform(req);
  if (!a) return std::move(a.err());
  if (!a->has_content_length)
    return make_store_error(store_errc::other, "HEAD answer without Content-Length", a->status);
  return object_info{key, a->content_length, a->etag};
}

store_result<list_page> s3_object_store::list(const std::string& prefix, const std::string& continuation,
                                              int max_keys) {
  if (max_keys < 1 || max_keys > max_list_keys) {
    return make_store_error(store_errc::invalid, fmt::format("list with max-keys {}", max_keys));
  }
  const cold_location& loc = settings_.location;
  std::string strip = loc.prefix.empty() ? std::string() : loc.prefix + "/";
  request req;
  req.query = {{"list-type", "2"}, {"prefix", strip + prefix}, {"max-keys", std::to_string(max_keys)}};
  if (!continuation.empty()) req.query.emplace_back("continuation-token", continuation);
  auto a = perform(req);
  if (!a) return std::move(a.err());
  auto page = parse_list_objects_v2(body_text(a->body));
  if (!page) return make_store_error(store_errc::other, "ListObjectsV2: " + page.err().reason, a->status);
  for (auto& o : page->objects) {
    if (o.key.compare(0, strip.size(), strip) != 0) {
      return make_store_error(store_errc::other,
                              fmt::format("listing returned '{}' outside the prefix", o.key));
    }
    o.key.erase(0, strip.size());
  }
  return std::move(*page);
}

store_result<store_done> s3_object_store::remove(const std::string& key) {
  if (key.empty()) return make_store_error(store_errc::invalid, "delete of an empty key");
  request req;
  req.method = "DELETE";
  req.key = key;
  auto a = perform(req);
  if (!a) return std::move(a.err());
  return store_done{};
}

}  // namespace weir::tier

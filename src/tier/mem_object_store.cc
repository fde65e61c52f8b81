#include "tier/mem_object_store.h"

#include <algorithm>

#include <fmt/format.h>

#include "storage/crc32c.h"

namespace weir::tier {
namespace {

bool matches(const injected_fault& f, store_op op, const std::string& key) {
  return f.op == op && key.compare(0, f.key_prefix.size(), f.key_prefix) == 0;
}

store_error no_answer(fault_kind kind) {
  bool timeout = kind == fault_kind::timeout || kind == fault_kind::timeout_after_apply;
  return timeout ? make_store_error(store_errc::timeout, "injected: no answer in time")
                 : make_store_error(store_errc::connection, "injected: connection reset by peer");
}

}  // namespace

std::string mem_object_store::etag_of(std::span<const std::byte> bytes) {
  // Opaque, like S3's (an MD5 there): it changes with the bytes.
  return fmt::format("{:08x}-{:x}", storage::crc32c(bytes), bytes.size());
}

void mem_object_store::inject(injected_fault f, int times) {
  std::lock_guard lock(mu_);
  if (f.kind == fault_kind::stall) release_ = false;
  queued_.emplace_back(std::move(f), times);
}

void mem_object_store::set_random_faults(double p, std::uint64_t seed) {
  std::lock_guard lock(mu_);
  random_p_ = p;
  rng_.seed(seed);
}

void mem_object_store::release_stalls() {
  std::lock_guard lock(mu_);
  release_ = true;
  cv_.notify_all();
}

void mem_object_store::wait_for_stalled(int n) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return stalled_ >= n; });
}

void mem_object_store::clear_faults() {
  std::lock_guard lock(mu_);
  queued_.clear();
  random_p_ = 0;
}

std::optional<injected_fault> mem_object_store::take_fault(std::unique_lock<std::mutex>& lock, store_op op,
                                                           const std::string& key) {
  ++requests_[static_cast<int>(op)];
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (!matches(it->first, op, key)) continue;
    injected_fault f = it->first;
    if (--it->second <= 0) queued_.erase(it);
    ++faults_hit_;
    if (f.kind == fault_kind::stall) {
      ++stalled_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return release_; });
      --stalled_;
      return std::nullopt;  // then runs normally
    }
    return f;
  }
  if (random_p_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < random_p_) {
    ++faults_hit_;
    injected_fault f;
    f.op = op;
    switch (std::uniform_int_distribution<int>(0, 5)(rng_)) {
      case 0:
        f.error = make_store_error(store_errc::throttled, "injected: Please reduce your request rate.", 503,
                                   "SlowDown");
        break;
      case 1:
        f.error = make_store_error(store_errc::server_error, "injected: We encountered an internal error.",
                                   500, "InternalError");
        break;
      case 2:
        f.kind = fault_kind::timeout;
        break;
      case 3:
        f.kind = fault_kind::reset;
        break;
      case 4:
        f.kind = fault_kind::timeout_after_apply;
        break;
      default:
        f.kind = fault_kind::reset_after_apply;
        break;
    }
    return f;
  }
  return std::nullopt;
}

store_result<object_info> mem_object_store::put(const std::string& key, std::span<const std::byte> bytes,
                                                put_options options) {
  if (key.empty() || bytes.size() > max_object_bytes) {
    return make_store_error(store_errc::invalid, fmt::format("put of {} bytes to '{}'", bytes.size(), key));
  }
  std::unique_lock lock(mu_);
  auto fault = take_fault(lock, store_op::put, key);
  if (fault && fault->kind == fault_kind::error) return fault->error;
  if (fault && (fault->kind == fault_kind::timeout || fault->kind == fault_kind::reset))
    return no_answer(fault->kind);
  if (options.if_absent && objects_.count(key)) {
    return make_store_error(store_errc::precondition_failed,
                            "At least one of the pre-conditions you specified did not hold", 412,
                            "PreconditionFailed");
  }
  stored s{object_bytes(bytes.begin(), bytes.end()), etag_of(bytes)};
  object_info info{key, s.bytes.size(), s.etag};
  objects_[key] = std::move(s);
  if (fault &&
      (fault->kind == fault_kind::timeout_after_apply || fault->kind == fault_kind::reset_after_apply)) {
    return no_answer(fault->kind);
  }
  return info;
}

store_result<range_read> mem_object_store::get_range(const std::string& key, std::uint64_t offset,
                                                     std::uint64_t length) {
  std::unique_lock lock(mu_);
  auto fault = take_fault(lock, store_op::get, key);
  if (fault && fault->kind == fault_kind::error) return fault->error;
  if (fault && fault->kind != fault_kind::short_read && fault->kind != fault_kind::corrupt_read) {
    return no_answer(fault->kind);  // a read applies nothing: before or after is the same
  }
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    return make_store_error(store_errc::not_found, "The specified key does not exist.", 404, "NoSuchKey");
  }
  const object_bytes& b = it->second.bytes;
  if (offset >= b.size() && !(offset == 0 && length == 0)) {
    return make_store_error(store_errc::bad_range, "The requested range is not satisfiable", 416,
                            "InvalidRange");
  }
  std::uint64_t n = length == 0 ? b.size() - offset : std::min<std::uint64_t>(length, b.size() - offset);
  range_read out;
  out.object_size = b.size();
  out.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(offset),
                   b.begin() + static_cast<std::ptrdiff_t>(offset + n));
  if (fault && fault->kind == fault_kind::short_read) out.bytes.resize(out.bytes.size() / 2);
  if (fault && fault->kind == fault_kind::corrupt_read && !out.bytes.empty()) {
    out.bytes[out.bytes.size() / 2] ^= std::byte{0x5a};
  }
  return out;
}

store_result<object_info> mem_object_store::head(const std::string& key) {
  std::unique_lock lock(mu_);
  auto fault = take_fault(lock, store_op::head, key);
  if (fault && fault->kind == fault_kind::error) return fault->error;
  if (fault && fault->kind != fault_kind::short_read && fault->kind != fault_kind::corrupt_read) {
    return no_answer(fault->kind);
  }
  auto it = objects_.find(key);
  // HEAD answers carry no body: S3 gives the status only, so no <Code> either.
  if (it == objects_.end()) return make_store_error(store_errc::not_found, "HEAD: no such key", 404);
  return object_info{key, it->second.bytes.size(), it->second.etag};
}

store_result<list_page> mem_object_store::list(const std::string& prefix, const std::string& continuation,
                                               int max_keys) {
  std::unique_lock lock(mu_);
  auto fault = take_fault(lock, store_op::list, prefix);
  if (fault && fault->kind == fault_kind::error) return fault->error;
  if (fault && fault->kind != fault_kind::short_read && fault->kind != fault_kind::corrupt_read) {
    return no_answer(fault->kind);
  }
  if (max_keys < 1 || max_keys > max_list_keys) {
    return make_store_error(store_errc::invalid, fmt::format("list with max-keys {}", max_keys));
  }
  // The token is opaque to callers; here it is the last key returned.
  constexpr std::string_view token_tag = "after:";
  std::string after;
  if (!continuation.empty()) {
    if (continuation.compare(0, token_tag.size(), token_tag) != 0) {
      return make_store_error(store_errc::other, "The continuation token provided is incorrect", 400,
                              "InvalidArgument");
    }
    after = continuation.substr(token_tag.size());
  }
  list_page page;
  auto it = continuation.empty() ? objects_.lower_bound(prefix) : objects_.upper_bound(after);
  for (; it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (static_cast<int>(page.objects.size()) == max_keys) {
      page.truncated = true;
      page.next_token = std::string(token_tag) + page.objects.back().key;
      break;
    }
    page.objects.push_back(object_info{it->first, it->second.bytes.size(), it->second.etag});
  }
  return page;
}

store_result<store_done> mem_object_store::remove(const std::string& key) {
  std::unique_lock lock(mu_);
  auto fault = take_fault(lock, store_op::remove, key);
  if (fault && fault->kind == fault_kind::error) return fault->error;
  if (fault && (fault->kind == fault_kind::timeout || fault->kind == fault_kind::reset))
    return no_answer(fault->kind);
  objects_.erase(key);
  if (fault &&
      (fault->kind == fault_kind::timeout_after_apply || fault->kind == fault_kind::reset_after_apply)) {
    return no_answer(fault->kind);
  }
  return store_done{};
}

std::uint64_t mem_object_store::requests(store_op op) const {
  std::lock_guard lock(mu_);
  return requests_[static_cast<int>(op)];
}

std::uint64_t mem_object_store::faults_hit() const {
  std::lock_guard lock(mu_);
  return faults_hit_;
}

std::optional<object_bytes> mem_object_store::contents(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second.bytes;
}

void mem_object_store::set_contents(const std::string& key, object_bytes bytes) {
  std::lock_guard lock(mu_);
  std::string etag = etag_of(bytes);
  objects_[key] = stored{std::move(bytes), std::move(etag)};
}

std::vector<std::string> mem_object_store::keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [k, v] : objects_) out.push_back(k);
  return out;
}

}  // namespace weir::tier

#include "subscriptions/subscription_log.h"

#include <simdjson.h>

#include <cstring>
#include <map>

#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/log.h"
#include "storage/crc32c.h"

namespace weir::subscriptions {
namespace {

constexpr std::size_t k_header_bytes = 8;
// A record is one subscription's config or one link: far below this. Larger lengths are garbage.
constexpr std::uint32_t k_max_record_bytes = 16u << 20;

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}

std::string dir_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

error corrupt(std::string reason) {
  return make_error(store_errc::corrupt, std::move(reason));
}

json_writer& begin(json_writer& w, std::string_view op, std::string_view key) {
  return w.begin_object().key("op").value(op).key("sub").value(key);
}

template <class T>
bool read_string(T el, std::string_view name, std::string& out) {
  std::string_view s;
  if (el[name].get(s) != simdjson::SUCCESS) return false;
  out = std::string(s);
  return true;
}

// Applies one record to the state being rebuilt.
status apply_record(std::map<std::string, persisted_subscription>& subs, simdjson::dom::element rec) {
  std::string op, key;
  if (!read_string(rec, "op", op) || !read_string(rec, "sub", key))
    return corrupt("record without op or sub");
  if (op == "sub") {
    persisted_subscription s;
    simdjson::dom::element cfg;
    if (!read_string(rec, "root", s.root) || !read_string(rec, "origin", s.origin) ||
        !read_string(rec, "id", s.id) || rec["config"].get(cfg) != simdjson::SUCCESS ||
        rec["created_at_ms"].get(s.created_at_wall_ms) != simdjson::SUCCESS) {
      return corrupt(fmt::format("bad sub record for '{}'", key));
    }
    auto parsed = read_persisted_config(simdjson::to_string(cfg));
    if (!parsed) return corrupt(fmt::format("subscription '{}': {}", key, parsed.err().reason));
    s.config = std::move(*parsed);
    if (subscription_key(s) != key) return corrupt(fmt::format("sub record key '{}' does not match", key));
    subs[key] = std::move(s);  // a re-created subscription starts over
    return {};
  }
  if (op == "del") {
    subs.erase(key);
    return {};
  }
  auto it = subs.find(key);
  if (it == subs.end()) return corrupt(fmt::format("'{}' record for unknown subscription '{}'", op, key));
  persisted_subscription& s = it->second;
  if (op == "state") {
    std::int64_t gen = 0, attempts = 0;
    if (rec["generation"].get(gen) != simdjson::SUCCESS || rec["failed"].get(s.failed) != simdjson::SUCCESS ||
        rec["failed_attempts"].get(attempts) != simdjson::SUCCESS ||
        rec["retry_at_ms"].get(s.retry_at_wall_ms) != simdjson::SUCCESS ||
        rec["paused"].get(s.paused) != simdjson::SUCCESS || gen < 0 || attempts < 0) {
      return corrupt(fmt::format("bad state record for '{}'", key));
    }
    s.generation = static_cast<std::uint64_t>(gen);
    s.failed_attempts = static_cast<int>(attempts);
    return {};
  }
  std::string path;
  if (!read_string(rec, "path", path)) return corrupt(fmt::format("'{}' record without path", op));
  if (op == "unlink") {
    s.links.erase(path);
    return {};
  }
  if (op == "link") {
    stream_link l;
    if (!read_string(rec, "acked_offset", l.acked_offset) ||
        rec["explicit"].get(l.explicit_link) != simdjson::SUCCESS ||
        rec["glob"].get(l.glob_link) != simdjson::SUCCESS) {
      return corrupt(fmt::format("bad link record for '{}'", key));
    }
    s.links[path] = std::move(l);
    return {};
  }
  return corrupt(fmt::format("unknown record op '{}'", op));
}

}  // namespace

void append_record(std::string& out, std::string_view payload) {
  WEIR_ASSERT(payload.size() <= k_max_record_bytes, "subscription log record of {} bytes", payload.size());
  put_u32(out, static_cast<std::uint32_t>(payload.size()));
  put_u32(out, storage::crc32c(std::as_bytes(std::span(payload.data(), payload.size()))));
  out.append(payload);
}

std::string sub_record(const persisted_subscription& s) {
  json_writer w;
  begin(w, "sub", subscription_key(s));
  w.key("root").value(s.root).key("origin").value(s.origin).key("id").value(s.id);
  w.key("config");
  write_persisted_config(w, s.config);
  w.key("created_at_ms").value(s.created_at_wall_ms);
  w.end_object();
  return w.take();
}

std::string state_record(std::string_view key, std::uint64_t generation, bool failed, int failed_attempts,
                         std::int64_t retry_at_wall_ms, bool paused) {
  json_writer w;
  begin(w, "state", key);
  w.key("generation").value(static_cast<std::int64_t>(generation)).key("failed").value(failed);
  w.key("failed_attempts").value(static_cast<std::int64_t>(failed_attempts));
  w.key("retry_at_ms").value(retry_at_wall_ms).key("paused").value(paused);
  w.end_object();
  return w.take();
}

std::string link_record(std::string_view key, std::string_view path, const stream_link& l) {
  json_writer w;
  begin(w, "link", key).key("path").value(path);
  w.key("explicit").value(l.explicit_link).key("glob").value(l.glob_link);
  w.key("acked_offset").value(l.acked_offset);
  w.end_object();
  return w.take();
}

std::string unlink_record(std::string_view key, std::string_view path) {
  json_writer w;
  begin(w, "unlink", key).key("path").value(path).end_object();
  return w.take();
}

std::string delete_record(std::string_view key) {
  json_writer w;
  begin(w, "del", key).end_object();
  return w.take();
}

std::string encode_image(const std::vector<persisted_subscription>& subs) {
  std::string out;
  for (const auto& s : subs) {
    std::string key = subscription_key(s);
    append_record(out, sub_record(s));
    append_record(out,
                  state_record(key, s.generation, s.failed, s.failed_attempts, s.retry_at_wall_ms, s.paused));
    for (const auto& [path, l] : s.links) append_record(out, link_record(key, path, l));
  }
  return out;
}

namespace {

// Applies the whole records at the start of `bytes` to `subs`; returns how many bytes they took. Stops
// at the first record cut short or failing its CRC; an intact record that makes no sense is an error.
result<std::size_t> apply_framed(std::map<std::string, persisted_subscription>& subs,
                                 std::span<const std::byte> bytes) {
  simdjson::dom::parser parser;
  std::size_t pos = 0;
  while (bytes.size() - pos >= k_header_bytes) {
    std::uint32_t len = get_u32(bytes.data() + pos);
    std::uint32_t crc = get_u32(bytes.data() + pos + 4);
    if (len > k_max_record_bytes || bytes.size() - pos - k_header_bytes < len) break;  // torn
    auto payload = bytes.subspan(pos + k_header_bytes, len);
    if (storage::crc32c(payload) != crc) break;  // torn (or the bytes after a torn write)
    simdjson::padded_string text(reinterpret_cast<const char*>(payload.data()), payload.size());
    simdjson::dom::element rec;
    if (parser.parse(text).get(rec) != simdjson::SUCCESS) {
      return corrupt(fmt::format("record at byte {} is not JSON", pos));
    }
    if (auto st = apply_record(subs, rec); !st) {
      return corrupt(fmt::format("record at byte {}: {}", pos, st.err().reason));
    }
    pos += k_header_bytes + len;
  }
  return pos;
}

}  // namespace

result<replayed_log> replay_log(std::span<const std::byte> bytes) {
  std::map<std::string, persisted_subscription> subs;
  auto valid = apply_framed(subs, bytes);
  if (!valid) return valid.err();
  replayed_log out;
  out.valid_bytes = *valid;
  out.dropped_bytes = bytes.size() - *valid;
  for (auto& [_, s] : subs) out.subs.push_back(std::move(s));
  return out;
}

status apply_records(std::map<std::string, persisted_subscription>& subs, std::span<const std::byte> bytes) {
  auto valid = apply_framed(subs, bytes);
  if (!valid) return valid.err();
  if (*valid != bytes.size()) {
    return corrupt(fmt::format("record at byte {} is cut short or fails its CRC", *valid));
  }
  return {};
}

// ---------------------------------------------------------------------------------------------------
// The journal

result<std::unique_ptr<subscription_journal>> subscription_journal::open(
    storage::env& env, std::string path, std::vector<persisted_subscription>& restored) {
  if (env.file_exists(path)) {
    auto bytes = storage::read_whole_file(env, path);
    if (!bytes) return bytes.err();
    auto log = replay_log(*bytes);
    if (!log) return make_error(store_errc::corrupt, fmt::format("{}: {}", path, log.err().reason));
    auto file = env.open_writable(path, storage::open_mode::open_existing);
    if (!file) return file.err();
    if (log->dropped_bytes != 0) {
      // A crash cut the last batch short: cut it off so new records follow whole ones.
      log::warn("subscriptions: {}: dropped a torn tail of {} bytes", path, log->dropped_bytes);
      if (auto st = (*file)->truncate(log->valid_bytes); !st) return st.err();
      if (auto st = (*file)->sync(); !st) return st.err();
    }
    restored = std::move(log->subs);
    return std::unique_ptr<subscription_journal>(
        new subscription_journal(env, std::move(path), std::move(*file)));
  }
  auto file = env.open_writable(path, storage::open_mode::create_new);
  if (!file) return file.err();
  if (auto st = env.sync_dir(dir_of(path)); !st) return st.err();
  restored.clear();
  return std::unique_ptr<subscription_journal>(
      new subscription_journal(env, std::move(path), std::move(*file)));
}

subscription_journal::subscription_journal(storage::env& env, std::string path,
                                           std::unique_ptr<storage::writable_file> file)
    : env_(env), path_(std::move(path)), file_(std::move(file)), thread_([this] { run(); }) {}

subscription_journal::~subscription_journal() {
  close();
}

void subscription_journal::submit(journal_batch b) {
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    queue_.push_back(std::move(b));
    ++submitted_;
  }
  cv_.notify_all();
}

void subscription_journal::flush() {
  std::unique_lock lock(mu_);
  std::uint64_t target = submitted_;
  cv_.wait(lock, [&] { return done_ >= target || stopped_; });
}

void subscription_journal::close() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void subscription_journal::run() {
  for (;;) {
    std::deque<journal_batch> work;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) {  // closing with nothing left to write
        stopped_ = true;
        cv_.notify_all();
        return;
      }
      work.swap(queue_);
    }
    // Appends since the last compaction in `work` share one sync (group commit).
    std::string appends;
    auto write_appends = [&] {
      if (appends.empty()) return;
      if (auto st = apply(journal_batch{false, std::move(appends)}); !st)
        log::error("subscriptions: cannot append to {}: {}", path_, st.err().reason);
      appends.clear();
    };
    for (auto& b : work) {
      if (!b.rewrite) {
        appends += b.bytes;
        continue;
      }
      write_appends();  // the image holds their effect too, but the log must not miss them if it fails
      if (auto st = apply(b); !st) log::error("subscriptions: cannot compact {}: {}", path_, st.err().reason);
    }
    write_appends();
    {
      std::lock_guard lock(mu_);
      done_ += work.size();
    }
    cv_.notify_all();
  }
}

status subscription_journal::apply(const journal_batch& b) {
  auto data = std::as_bytes(std::span(b.bytes.data(), b.bytes.size()));
  if (!b.rewrite) {
    if (!file_) return make_error(store_errc::io, "no log file (an earlier compaction failed)");
    std::uint64_t before = file_->size();
    if (auto st = file_->append(data); !st) {
      (void)file_->truncate(before);  // never leave half a batch in front of the next one
      return st;
    }
    return file_->sync();
  }
  // Compaction: the image goes to a temporary file, synced, then renamed over the log.
  std::string tmp = path_ + ".tmp";
  if (env_.file_exists(tmp)) {
    if (auto st = env_.remove_file(tmp); !st) return st;
  }
  auto f = env_.open_writable(tmp, storage::open_mode::create_new);
  if (!f) return f.err();
  if (auto st = (*f)->append(data); !st) return st;
  if (auto st = (*f)->sync(); !st) return st;
  f->reset();
  if (auto st = env_.rename_file(tmp, path_); !st) return st;
  if (auto st = env_.sync_dir(dir_of(path_)); !st) return st;
  auto reopened = env_.open_writable(path_, storage::open_mode::open_existing);
  if (!reopened) {
    file_.reset();
    return reopened.err();
  }
  file_ = std::move(*reopened);
  return {};
}

}  // namespace weir::subscriptions

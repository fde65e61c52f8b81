#include "storage/mem_env.h"

#include <algorithm>
#include <cerrno>

namespace weir::storage {

struct mem_env::file_state {
  std::string path;
  std::vector<std::byte> current;  // what reads see
  std::vector<std::byte> durable;  // what survives a crash
  bool dir_synced = false;         // false: created since the last sync_dir, lost on crash
  bool detached = false;           // removed, replaced or from before a crash
};

namespace {

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash);
}

std::string strip_trailing_slash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

class mem_writable_file final : public writable_file {
 public:
  // `at`: where writes go (open_mode::overwrite: 0); nullopt: at the end of the file.
  mem_writable_file(mem_env& e, std::shared_ptr<mem_env::file_state> f, std::optional<std::uint64_t> at = {})
      : env_(e), f_(std::move(f)), at_(at) {}
  status append(std::span<const std::byte> data) override {
    if (!at_) return env_.file_write(*f_, std::nullopt, data);
    std::uint64_t written = 0;
    status st = env_.file_write(*f_, *at_, data, &written);
    *at_ += written;
    return st;
  }
  status sync() override { return env_.file_sync(*f_); }
  status truncate(std::uint64_t size) override {
    status st = env_.file_truncate(*f_, size);
    if (st && at_) at_ = std::min(*at_, size);
    return st;
  }
  std::uint64_t size() const override { return at_ ? *at_ : env_.file_size(*f_); }

 private:
  mem_env& env_;
  std::shared_ptr<mem_env::file_state> f_;
  std::optional<std::uint64_t> at_;
};

class mem_random_access_file final : public random_access_file {
 public:
  mem_random_access_file(const mem_env& e, std::shared_ptr<mem_env::file_state> f)
      : env_(e), f_(std::move(f)) {}
  result<std::size_t> read(std::uint64_t offset, std::span<std::byte> out) const override {
    return env_.file_read(*f_, offset, out);
  }
  result<std::uint64_t> size() const override { return env_.file_size(*f_); }

 private:
  const mem_env& env_;
  std::shared_ptr<mem_env::file_state> f_;
};

}  // namespace

mem_env::mem_env() {
  dirs_.insert("");
}
mem_env::~mem_env() = default;

result<std::unique_ptr<writable_file>> mem_env::open_writable(const std::string& path, open_mode mode) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "open " + path);
  auto it = files_.find(path);
  if (mode == open_mode::create_new) {
    if (it != files_.end()) return errno_error(EEXIST, "open " + path);
    if (!dirs_.contains(parent_of(path))) return errno_error(ENOENT, "open " + path);
    auto f = std::make_shared<file_state>();
    f->path = path;
    files_[path] = f;
    return std::unique_ptr<writable_file>(std::make_unique<mem_writable_file>(*this, f));
  }
  if (it == files_.end()) return errno_error(ENOENT, "open " + path);
  std::optional<std::uint64_t> at;
  if (mode == open_mode::overwrite) at = 0;
  return std::unique_ptr<writable_file>(std::make_unique<mem_writable_file>(*this, it->second, at));
}

result<std::unique_ptr<random_access_file>> mem_env::open_readable(const std::string& path) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "open " + path);
  auto it = files_.find(path);
  if (it == files_.end()) return errno_error(ENOENT, "open " + path);
  return std::unique_ptr<random_access_file>(std::make_unique<mem_random_access_file>(*this, it->second));
}

result<std::vector<std::string>> mem_env::list_dir(const std::string& dir_in) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "opendir " + dir_in);
  std::string dir = strip_trailing_slash(dir_in);
  if (!dirs_.contains(dir)) return errno_error(ENOENT, "opendir " + dir);
  std::vector<std::string> names;
  for (const auto& [path, f] : files_) {
    if (parent_of(path) == dir) names.push_back(path.substr(dir.empty() ? 0 : dir.size() + 1));
  }
  return names;
}

status mem_env::create_dirs(const std::string& dir_in) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "mkdir " + dir_in);
  std::string dir = strip_trailing_slash(dir_in);
  while (!dir.empty() && !dirs_.contains(dir)) {
    dirs_.insert(dir);
    dir = parent_of(dir);
  }
  return {};
}

status mem_env::remove_file(const std::string& path) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "unlink " + path);
  auto it = files_.find(path);
  if (it == files_.end()) return errno_error(ENOENT, "unlink " + path);
  it->second->detached = true;
  files_.erase(it);
  return {};
}

status mem_env::rename_file(const std::string& from, const std::string& to) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "rename " + from);
  auto it = files_.find(from);
  if (it == files_.end()) return errno_error(ENOENT, "rename " + from);
  auto f = it->second;
  files_.erase(it);
  if (auto old = files_.find(to); old != files_.end()) old->second->detached = true;
  f->path = to;
  f->dir_synced = true;  // renames are durable at once in this model
  files_[to] = f;
  return {};
}

status mem_env::sync_dir(const std::string& dir_in) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "fsync dir " + dir_in);
  std::string dir = strip_trailing_slash(dir_in);
  if (!dirs_.contains(dir)) return errno_error(ENOENT, "open dir " + dir);
  for (auto& [path, f] : files_) {
    if (parent_of(path) == dir) f->dir_synced = true;
  }
  return {};
}

bool mem_env::file_exists(const std::string& path) {
  std::lock_guard lock(mu_);
  return files_.contains(path) || dirs_.contains(strip_trailing_slash(path));
}

void mem_env::crash(std::optional<std::uint64_t> torn_seed) {
  std::lock_guard lock(mu_);
  std::mt19937_64 rng(torn_seed.value_or(0));
  std::map<std::string, std::shared_ptr<file_state>> survivors;
  for (auto& [path, f] : files_) {
    f->detached = true;  // handles opened before the crash write into the void from now on
    if (!f->dir_synced) continue;
    auto fresh = std::make_shared<file_state>();
    fresh->path = path;
    fresh->dir_synced = true;
    const auto& cur = f->current;
    const auto& dur = f->durable;
    std::vector<std::byte> kept = dur;
    if (torn_seed) {
      // Some prefix of the unsynced changes reached the platter: the first `keep` bytes come from the
      // current content, the rest (if the durable file was longer) from the durable one.
      std::size_t common = 0;
      std::size_t lim = std::min(cur.size(), dur.size());
      while (common < lim && cur[common] == dur[common]) ++common;
      std::size_t keep = common + static_cast<std::size_t>(rng() % (cur.size() - common + 1));
      kept.assign(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(keep));
      if (dur.size() > keep)
        kept.insert(kept.end(), dur.begin() + static_cast<std::ptrdiff_t>(keep), dur.end());
    }
    fresh->current = kept;
    fresh->durable = std::move(kept);
    survivors[path] = std::move(fresh);
  }
  files_ = std::move(survivors);
  failing_syncs_ = 0;
  write_error_ = false;
  halted_ = true;
}

void mem_env::restart() {
  std::lock_guard lock(mu_);
  halted_ = false;
}

void mem_env::set_capacity(std::optional<std::uint64_t> bytes) {
  std::lock_guard lock(mu_);
  capacity_ = bytes;
}

void mem_env::fail_next_syncs(int n) {
  std::lock_guard lock(mu_);
  failing_syncs_ = n;
}

void mem_env::set_write_error(bool on) {
  std::lock_guard lock(mu_);
  write_error_ = on;
}

std::uint64_t mem_env::sync_count() const {
  std::lock_guard lock(mu_);
  return syncs_;
}

std::uint64_t mem_env::append_count() const {
  std::lock_guard lock(mu_);
  return appends_;
}

std::uint64_t mem_env::used_locked() const {
  std::uint64_t used = 0;
  for (const auto& [path, f] : files_) used += f->current.size();
  return used;
}

std::uint64_t mem_env::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_locked();
}

std::optional<std::vector<std::byte>> mem_env::contents(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return std::nullopt;
  return it->second->current;
}

void mem_env::set_contents(const std::string& path, std::vector<std::byte> bytes) {
  std::lock_guard lock(mu_);
  auto& f = files_[path];
  if (!f) {
    f = std::make_shared<file_state>();
    f->path = path;
  }
  f->dir_synced = true;
  f->current = bytes;
  f->durable = std::move(bytes);
}

status mem_env::file_write(file_state& f, std::optional<std::uint64_t> at, std::span<const std::byte> data,
                           std::uint64_t* written) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "write " + f.path);
  ++appends_;
  if (write_error_) return errno_error(EIO, "write " + f.path);
  const std::size_t off = at ? static_cast<std::size_t>(*at) : f.current.size();
  if (off > f.current.size()) f.current.resize(off);  // a hole reads as zeros
  // Bytes over the existing content cost no space; only growth counts against the capacity.
  const std::size_t over = std::min(data.size(), f.current.size() - off);
  std::size_t fits = data.size();
  if (capacity_ && !f.detached) {
    std::uint64_t used = used_locked();
    std::uint64_t room = *capacity_ > used ? *capacity_ - used : 0;
    fits = over + static_cast<std::size_t>(std::min<std::uint64_t>(room, data.size() - over));
  }
  std::copy_n(data.begin(), over, f.current.begin() + static_cast<std::ptrdiff_t>(off));
  f.current.insert(f.current.end(), data.begin() + static_cast<std::ptrdiff_t>(over),
                   data.begin() + static_cast<std::ptrdiff_t>(fits));
  if (written) *written = fits;
  if (fits < data.size()) return errno_error(ENOSPC, "write " + f.path);
  return {};
}

status mem_env::file_sync(file_state& f) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "fdatasync " + f.path);
  ++syncs_;
  if (failing_syncs_ > 0) {
    --failing_syncs_;
    return errno_error(EIO, "fdatasync " + f.path);
  }
  f.durable = f.current;
  return {};
}

status mem_env::file_truncate(file_state& f, std::uint64_t size) {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "ftruncate " + f.path);
  if (size < f.current.size()) f.current.resize(static_cast<std::size_t>(size));
  return {};
}

std::uint64_t mem_env::file_size(const file_state& f) const {
  std::lock_guard lock(mu_);
  return f.current.size();
}

result<std::size_t> mem_env::file_read(const file_state& f, std::uint64_t offset,
                                       std::span<std::byte> out) const {
  std::lock_guard lock(mu_);
  if (halted_) return errno_error(EIO, "read " + f.path);
  if (offset >= f.current.size()) return std::size_t{0};
  std::size_t n = std::min<std::size_t>(out.size(), f.current.size() - static_cast<std::size_t>(offset));
  std::copy_n(f.current.begin() + static_cast<std::ptrdiff_t>(offset), n, out.begin());
  return n;
}

}  // namespace weir::storage

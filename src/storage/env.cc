#include "storage/env.h"

namespace weir::storage {
namespace {

std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

result<std::vector<std::byte>> read_whole_file(env& e, const std::string& path) {
  auto file = e.open_readable(path);
  if (!file) return file.err();
  auto size = (*file)->size();
  if (!size) return size.err();
  std::vector<std::byte> bytes(static_cast<std::size_t>(*size));
  auto n = (*file)->read(0, bytes);
  if (!n) return n.err();
  bytes.resize(*n);
  return bytes;
}

status replace_file(env& e, const std::string& path, std::span<const std::byte> data) {
  const std::string tmp = path + ".tmp";
  if (e.file_exists(tmp)) {
    if (auto st = e.remove_file(tmp); !st) return st;  // left by a crash in this function
  }
  auto f = e.open_writable(tmp, open_mode::create_new);
  if (!f) return f.err();
  if (auto st = (*f)->append(data); !st) return st;
  if (auto st = (*f)->sync(); !st) return st;
  f->reset();
  if (auto st = e.rename_file(tmp, path); !st) return st;
  return e.sync_dir(parent_dir(path));
}

}  // namespace weir::storage

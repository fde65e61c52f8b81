#include "storage/env.h"

namespace weir::storage {

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

}  // namespace weir::storage

#include "storage/checkpoint_store.h"

#include <algorithm>

#include "base/log.h"
#include "storage/log_format.h"

namespace weir::storage {

status checkpoint_store::write(lsn covered, std::span<const std::byte> blob) {
  const std::string final_path = join_path(dir_, format::checkpoint_file_name(covered));
  const std::string tmp_path = final_path + std::string(format::temp_suffix);
  if (env_.file_exists(tmp_path)) (void)env_.remove_file(tmp_path);

  auto header = format::encode_checkpoint_header(covered, blob);
  status st = [&]() -> status {
    auto file = env_.open_writable(tmp_path, open_mode::create_new);
    if (!file) return file.err();
    if (auto s = (*file)->append(header); !s) return s;
    if (auto s = (*file)->append(blob); !s) return s;
    return (*file)->sync();
  }();
  if (st) st = env_.rename_file(tmp_path, final_path);
  if (st) st = env_.sync_dir(dir_);
  if (!st) {
    (void)env_.remove_file(tmp_path);  // best effort: recovery ignores temp files anyway
    return st;
  }

  // The new checkpoint is durable: older ones (and their temp files) are dead weight.
  auto names = env_.list_dir(dir_);
  if (!names) return {};
  for (const auto& name : *names) {
    auto l = format::parse_checkpoint_file_name(name);
    bool stale =
        (l && *l < covered) || (name.starts_with("checkpoint-") && name.ends_with(format::temp_suffix));
    if (stale) (void)env_.remove_file(join_path(dir_, name));
  }
  return {};
}

result<std::optional<checkpoint>> checkpoint_store::load_latest() {
  auto names = env_.list_dir(dir_);
  if (!names) return names.err();
  std::vector<lsn> found;
  for (const auto& name : *names) {
    if (auto l = format::parse_checkpoint_file_name(name)) found.push_back(*l);
  }
  std::sort(found.begin(), found.end(), std::greater<>());
  for (lsn l : found) {
    const std::string path = join_path(dir_, format::checkpoint_file_name(l));
    auto bytes = read_whole_file(env_, path);
    if (!bytes) return bytes.err();
    std::span<const std::byte> all(*bytes);
    auto h = format::decode_checkpoint_header(all);
    bool ok = h && h->covered == l && all.size() == format::checkpoint_header_size + h->blob_length &&
              format::checkpoint_crc_ok(all.first(format::checkpoint_header_size),
                                        all.subspan(format::checkpoint_header_size));
    if (!ok) {
      log::error("storage: checkpoint {} is damaged (bad header, length or CRC); trying an older one", path);
      continue;
    }
    checkpoint c{l, std::vector<std::byte>(all.begin() + format::checkpoint_header_size, all.end())};
    return std::optional<checkpoint>(std::move(c));
  }
  return std::optional<checkpoint>();
}

}  // namespace weir::storage

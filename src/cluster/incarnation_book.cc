#include "cluster/incarnation_book.h"

#include <charconv>
#include <span>

#include "cluster/key_value_text.h"

namespace weir::cluster {
namespace {
bool whole_number(std::string_view s, std::uint64_t& v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc{} && end == s.data() + s.size();
}
}  // namespace

std::string incarnation_book::format(const std::map<std::uint64_t, std::uint64_t>& by_id) {
  std::string text =
      "# weir: the incarnations of the data directories of this node's peers (docs/replication.md)\n";
  for (const auto& [id, inc] : by_id)
    text += "node-" + std::to_string(id) + " = " + std::to_string(inc) + "\n";
  return text;
}

result<std::map<std::uint64_t, std::uint64_t>> incarnation_book::parse(std::string_view text) {
  std::map<std::uint64_t, std::uint64_t> by_id;
  auto failed = for_each_key_value(
      text,
      [&](std::string_view key, std::string_view value, std::string_view line) -> std::optional<std::string> {
        std::uint64_t id = 0, inc = 0;
        if (!key.starts_with("node-") || !whole_number(key.substr(5), id) || id == 0)
          return "'" + std::string(line) + "': the key is not node-<id>";
        if (!whole_number(value, inc) || inc == 0)
          return "'" + std::string(line) + "': the value is not an incarnation";
        if (!by_id.emplace(id, inc).second) return "node " + std::to_string(id) + " twice";
        return std::nullopt;
      });
  if (failed) return make_error(incarnation_errc::corrupt, std::move(*failed));
  return by_id;
}

result<incarnation_book> incarnation_book::open(storage::env& e, const std::string& data_dir) {
  incarnation_book book(e, storage::join_path(data_dir, file_name));
  if (!e.file_exists(book.path_)) return book;
  auto bytes = storage::read_whole_file(e, book.path_);
  if (!bytes) return make_error(incarnation_errc::io_error, book.path_ + ": " + bytes.err().reason);
  auto parsed = parse(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!parsed) return make_error(incarnation_errc::corrupt, book.path_ + ": " + parsed.err().reason);
  book.by_id_ = std::move(*parsed);
  return book;
}

weir::status incarnation_book::store(const std::map<std::uint64_t, std::uint64_t>& next) {
  const std::string text = format(next);
  if (auto st = storage::replace_file(*env_, path_, std::as_bytes(std::span(text.data(), text.size()))); !st)
    return make_error(incarnation_errc::io_error, path_ + ": " + st.err().reason);
  by_id_ = next;
  return {};
}

result<incarnation_book::verdict> incarnation_book::judge(std::uint64_t id, std::uint64_t incarnation) {
  if (incarnation == 0) return verdict::known;
  if (auto it = by_id_.find(id); it != by_id_.end())
    return it->second == incarnation ? verdict::known : verdict::other;
  auto next = by_id_;
  next[id] = incarnation;
  if (auto st = store(next); !st) return st.err();
  return verdict::recorded;
}

weir::status incarnation_book::forget(std::uint64_t id) {
  if (!by_id_.contains(id)) return {};
  auto next = by_id_;
  next.erase(id);
  return store(next);
}

std::optional<std::uint64_t> incarnation_book::find(std::uint64_t id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

}  // namespace weir::cluster

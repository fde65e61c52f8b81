#include "cli/content_kind.h"

#include <algorithm>
#include <cctype>

#include <simdjson.h>

namespace weir::cli {

content_kind classify_content_type(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  std::string lower(media);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "application/json") return content_kind::json;
  if (lower.starts_with("text/")) return content_kind::text;
  return content_kind::binary;
}

result<std::vector<std::string>> json_array_messages(std::string_view array_text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::array messages;
  if (parser.parse(array_text.data(), array_text.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_array().get(messages) != simdjson::SUCCESS) {
    return error{1, "a JSON stream's read did not return a JSON array"};
  }
  std::vector<std::string> out;
  for (simdjson::dom::element m : messages) out.push_back(simdjson::minify(m));
  return out;
}

}  // namespace weir::cli

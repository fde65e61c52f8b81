#include "tier/s3_xml.h"

#include <charconv>
#include <cstdint>

namespace weir::tier {
namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The element `<tag>` or `<tag attr...>` starting at or after `from`; npos if none. `content` is set to
// the position after the start tag's '>'.
std::size_t find_start_tag(std::string_view xml, std::string_view tag, std::size_t from,
                           std::size_t& content) {
  while (from < xml.size()) {
    std::size_t lt = xml.find('<', from);
    if (lt == std::string_view::npos || lt + 1 + tag.size() > xml.size()) return std::string_view::npos;
    std::size_t after = lt + 1 + tag.size();
    if (xml.compare(lt + 1, tag.size(), tag) == 0 && after < xml.size() &&
        (xml[after] == '>' || xml[after] == ' ' || xml[after] == '\t' || xml[after] == '\n' ||
         xml[after] == '\r' || xml[after] == '/')) {
      std::size_t gt = xml.find('>', after);
      if (gt == std::string_view::npos) return std::string_view::npos;
      if (xml[gt - 1] == '/') {  // <tag/>: empty element
        content = gt + 1;
        return lt;
      }
      content = gt + 1;
      return lt;
    }
    from = lt + 1;
  }
  return std::string_view::npos;
}

// The content of each <tag>...</tag> in turn (no nesting of the same tag in S3's documents).
struct element_cursor {
  std::string_view xml;
  std::string_view tag;
  std::size_t pos = 0;

  std::optional<std::string_view> next() {
    std::size_t content = 0;
    std::size_t start = find_start_tag(xml, tag, pos, content);
    if (start == std::string_view::npos) return std::nullopt;
    if (content >= 2 && xml[content - 2] == '/') {
      pos = content;
      return std::string_view{};
    }
    std::string close = "</" + std::string(tag) + ">";
    std::size_t end = xml.find(close, content);
    if (end == std::string_view::npos) return std::nullopt;
    pos = end + close.size();
    return xml.substr(content, end - content);
  }
};

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string strip_quotes(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

std::optional<std::string> xml_unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '&') {
      out.push_back(c);
      continue;
    }
    std::size_t semi = text.find(';', i);
    if (semi == std::string_view::npos || semi - i > 12) return std::nullopt;
    std::string_view ent = text.substr(i + 1, semi - i - 1);
    if (ent == "amp") {
      out.push_back('&');
    } else if (ent == "lt") {
      out.push_back('<');
    } else if (ent == "gt") {
      out.push_back('>');
    } else if (ent == "quot") {
      out.push_back('"');
    } else if (ent == "apos") {
      out.push_back('\'');
    } else if (ent.size() >= 2 && ent[0] == '#') {
      std::uint32_t cp = 0;
      bool hex = ent[1] == 'x' || ent[1] == 'X';
      std::string_view digits = ent.substr(hex ? 2 : 1);
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (ec != std::errc{} || p != digits.data() + digits.size() || digits.empty() || cp > 0x10FFFF ||
          (cp >= 0xD800 && cp <= 0xDFFF)) {
        return std::nullopt;
      }
      append_utf8(out, cp);
    } else {
      return std::nullopt;
    }
    i = semi;
  }
  return out;
}

std::optional<std::string> xml_leaf(std::string_view xml, std::string_view tag) {
  element_cursor cur{xml, tag};
  auto text = cur.next();
  if (!text) return std::nullopt;
  return xml_unescape(*text);
}

result<list_page> parse_list_objects_v2(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return weir::error{0, "not a ListBucketResult document"};
  }
  list_page page;
  element_cursor contents{xml, "Contents"};
  while (auto c = contents.next()) {
    object_info info;
    auto key = xml_leaf(*c, "Key");
    if (!key) return weir::error{0, "a <Contents> without a valid <Key>"};
    info.key = std::move(*key);
    auto size = xml_leaf(*c, "Size");
    auto n = size ? parse_u64(*size) : std::nullopt;
    if (!n) return weir::error{0, "a <Contents> without a valid <Size>"};
    info.size = *n;
    if (auto etag = xml_leaf(*c, "ETag")) info.etag = strip_quotes(std::move(*etag));
    page.objects.push_back(std::move(info));
  }
  auto truncated = xml_leaf(xml, "IsTruncated");
  page.truncated = truncated && *truncated == "true";
  if (page.truncated) {
    auto token = xml_leaf(xml, "NextContinuationToken");
    if (!token || token->empty()) return weir::error{0, "a truncated listing without NextContinuationToken"};
    page.next_token = std::move(*token);
  }
  return page;
}

std::optional<s3_error_body> parse_s3_error(std::string_view xml) {
  if (xml.find("<Error") == std::string_view::npos) return std::nullopt;
  auto code = xml_leaf(xml, "Code");
  if (!code) return std::nullopt;
  s3_error_body out;
  out.code = std::move(*code);
  if (auto message = xml_leaf(xml, "Message")) out.message = std::move(*message);
  return out;
}

}  // namespace weir::tier

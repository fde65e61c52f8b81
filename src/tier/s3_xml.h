// s3_xml: the two S3 reply bodies weir reads, ListObjectsV2's ListBucketResult and the <Error> document,
// parsed by a small hand scanner (no XML library: these documents are flat, and in S3's XML text a '<'
// is always escaped, so the next '<' always starts a tag).
//
// Pure and fuzz-safe: any input yields a value or an error, never a crash. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "tier/object_store.h"

namespace weir::tier {

// A ListBucketResult body as one page. Keys come back as S3 has them (the S3 store strips its prefix).
result<list_page> parse_list_objects_v2(std::string_view xml);

struct s3_error_body {
  std::string code;  // "NoSuchKey", "SlowDown", "SignatureDoesNotMatch", ...
  std::string message;
};
// The <Error> document of a failed request; nullopt when the body is not one (HEAD answers have none).
std::optional<s3_error_body> parse_s3_error(std::string_view xml);

// The text of the first <tag>...</tag> in xml (entities decoded); nullopt when absent or malformed.
std::optional<std::string> xml_leaf(std::string_view xml, std::string_view tag);
// XML 1.0 predefined entities and numeric character references; nullopt on a malformed one.
std::optional<std::string> xml_unescape(std::string_view text);

}  // namespace weir::tier

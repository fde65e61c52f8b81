// The S3 reply parsers: ListObjectsV2 pages (as AWS and s3rver write them) and <Error> documents.
#include "tier/s3_xml.h"

#include <gtest/gtest.h>

#include <random>

namespace weir::tier {
namespace {

// The shape of the AWS API reference's ListObjectsV2 example, with a continuation.
constexpr std::string_view aws_page = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix>p/</Prefix>
  <KeyCount>2</KeyCount>
  <MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents>
    <Key>p/a&amp;b.obj</Key>
    <LastModified>2013-09-17T18:07:53.000Z</LastModified>
    <ETag>&quot;599bab3ed2c697f1d26842727561fd94&quot;</ETag>
    <Size>857</Size>
    <StorageClass>REDUCED_REDUNDANCY</StorageClass>
  </Contents>
  <Contents>
    <Key>p/&#xe9;t&#233;</Key>
    <ETag>"abc"</ETag>
    <Size>0</Size>
  </Contents>
</ListBucketResult>)";

TEST(s3_xml, list_page) {
  auto page = parse_list_objects_v2(aws_page);
  ASSERT_TRUE(page) << page.err().reason;
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "p/a&b.obj");
  EXPECT_EQ(page->objects[0].size, 857u);
  EXPECT_EQ(page->objects[0].etag, "599bab3ed2c697f1d26842727561fd94");
  EXPECT_EQ(page->objects[1].key, "p/\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(page->objects[1].size, 0u);
  EXPECT_EQ(page->objects[1].etag, "abc");
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(s3_xml, last_and_empty_pages) {
  auto last = parse_list_objects_v2(
      "<ListBucketResult><KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>"
      "<Contents><Key>k</Key><Size>3</Size></Contents></ListBucketResult>");
  ASSERT_TRUE(last);
  EXPECT_FALSE(last->truncated);
  EXPECT_TRUE(last->next_token.empty());
  ASSERT_EQ(last->objects.size(), 1u);
  EXPECT_EQ(last->objects[0].key, "k");  // <KeyCount> is not mistaken for <Key>
  auto empty = parse_list_objects_v2("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->objects.empty());
}

TEST(s3_xml, malformed_lists_are_errors) {
  EXPECT_FALSE(parse_list_objects_v2("<Error><Code>AccessDenied</Code></Error>"));
  EXPECT_FALSE(
      parse_list_objects_v2("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"));
  EXPECT_FALSE(parse_list_objects_v2("<ListBucketResult><Contents><Key>k</Key><Size>x</Size></Contents>"));
  EXPECT_FALSE(parse_list_objects_v2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"));
  EXPECT_FALSE(
      parse_list_objects_v2("<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents>"));
}

TEST(s3_xml, error_document) {
  auto e = parse_s3_error(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>1</RequestId></Error>)");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "SlowDown");
  EXPECT_EQ(e->message, "Please reduce your request rate.");
  EXPECT_FALSE(parse_s3_error(""));
  EXPECT_FALSE(parse_s3_error("<html>bad gateway</html>"));
}

TEST(s3_xml, unescape) {
  EXPECT_EQ(*xml_unescape("a&lt;b&gt;c&amp;d&quot;e&apos;f"), "a<b>c&d\"e'f");
  EXPECT_EQ(*xml_unescape("&#65;&#x42;&#x1F600;"), "AB\xf0\x9f\x98\x80");
  EXPECT_FALSE(xml_unescape("&#xD800;"));
  EXPECT_FALSE(xml_unescape("&#x110000;"));
  EXPECT_FALSE(xml_unescape("&amp"));
  EXPECT_FALSE(xml_unescape("&#;"));
}

TEST(s3_xml, garbage_never_crashes) {
  std::mt19937_64 rng(5);
  const std::string alphabet = "<>/&;#x Contents Key Size IsTruncated ListBucketResult Error Code 0123456789";
  for (int i = 0; i < 5000; ++i) {
    std::string s;
    std::size_t n = rng() % 120;
    for (std::size_t j = 0; j < n; ++j) s.push_back(alphabet[rng() % alphabet.size()]);
    (void)parse_list_objects_v2(s);
    (void)parse_s3_error(s);
  }
}

}  // namespace
}  // namespace weir::tier

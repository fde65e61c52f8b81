// The SigV4 signer against the AWS S3 API reference's examples ("Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk"): access key AKIAIOSFODNN7EXAMPLE, secret
// wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, 20130524T000000Z, us-east-1, bucket examplebucket.
#include "tier/s3_signer.h"

#include <gtest/gtest.h>

namespace weir::tier {
namespace {

const s3_credentials example_creds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
constexpr const char* example_date = "20130524T000000Z";
constexpr const char* example_host = "examplebucket.s3.amazonaws.com";

TEST(s3_signer, get_object_with_range) {
  s3_request_to_sign req{"GET", "/test.txt", {}, {{"Range", "bytes=0-9"}}, empty_payload_sha256};
  sigv4_parts p = sign_request(req, example_creds, "us-east-1", example_host, example_date);
  EXPECT_EQ(p.canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(p.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(p.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(p.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  // sign_request leaves in req.headers exactly what to send.
  bool has_auth = false;
  for (const auto& [n, v] : req.headers) has_auth |= (n == "Authorization" && v == p.authorization);
  EXPECT_TRUE(has_auth);
}

TEST(s3_signer, put_object_hashes_the_body_and_encodes_the_key) {
  std::string hash = payload_sha256_hex(std::string_view("Welcome to Amazon S3."));
  EXPECT_EQ(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  s3_request_to_sign req{
      "PUT",
      "/" + uri_encode("test$file.text", false),
      {},
      {{"Date", "Fri, 24 May 2013 00:00:00 GMT"}, {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
      hash};
  sigv4_parts p = sign_request(req, example_creds, "us-east-1", example_host, example_date);
  EXPECT_EQ(
      p.canonical_request,
      "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:examplebucket.s3.amazonaws.com\n"
      "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
      "x-amz-date:20130524T000000Z\nx-amz-storage-class:REDUCED_REDUNDANCY\n\n"
      "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
      "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(p.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
  EXPECT_EQ(p.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(s3_signer, list_objects_sorts_the_query) {
  // The example's URL is /?max-keys=2&prefix=J; given in the other order, the canonical query is sorted.
  s3_request_to_sign req{"GET", "/", {{"prefix", "J"}, {"max-keys", "2"}}, {}, empty_payload_sha256};
  sigv4_parts p = sign_request(req, example_creds, "us-east-1", example_host, example_date);
  EXPECT_NE(p.canonical_request.find("\nmax-keys=2&prefix=J\n"), std::string::npos);
  EXPECT_EQ(p.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(s3_signer, bucket_lifecycle_has_an_empty_value) {
  // GET /?lifecycle: a parameter without a value is "lifecycle=" in the canonical query.
  s3_request_to_sign req{"GET", "/", {{"lifecycle", ""}}, {}, empty_payload_sha256};
  sigv4_parts p = sign_request(req, example_creds, "us-east-1", example_host, example_date);
  EXPECT_NE(p.canonical_request.find("\nlifecycle=\n"), std::string::npos);
  EXPECT_EQ(p.signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(s3_signer, signing_key_depends_on_every_scope_part) {
  std::string k = sigv4_signing_key("secret", "20130524", "us-east-1", "s3");
  EXPECT_EQ(k.size(), 32u);
  EXPECT_NE(k, sigv4_signing_key("secret", "20130525", "us-east-1", "s3"));
  EXPECT_NE(k, sigv4_signing_key("secret", "20130524", "eu-west-1", "s3"));
  EXPECT_NE(k, sigv4_signing_key("secret2", "20130524", "us-east-1", "s3"));
}

TEST(s3_signer, uri_encoding) {
  EXPECT_EQ(uri_encode("a b", false), "a%20b");
  EXPECT_EQ(uri_encode("a+b", false), "a%2Bb");
  EXPECT_EQ(uri_encode("100%", false), "100%25");
  EXPECT_EQ(uri_encode("a/b", false), "a/b");
  EXPECT_EQ(uri_encode("a/b", true), "a%2Fb");
  EXPECT_EQ(uri_encode("A-z_0.9~", true), "A-z_0.9~");
  EXPECT_EQ(uri_encode("=&?#", true), "%3D%26%3F%23");
  EXPECT_EQ(uri_encode("\xd0\xba", true), "%D0%BA");
}

TEST(s3_signer, canonical_query_encodes_continuation_tokens) {
  // s3rver's continuation tokens are base64 ('+', '/', '='): every one of them is encoded.
  EXPECT_EQ(canonical_query({{"list-type", "2"}, {"continuation-token", "ab+c/d=="}, {"prefix", "e1/g2/"}}),
            "continuation-token=ab%2Bc%2Fd%3D%3D&list-type=2&prefix=e1%2Fg2%2F");
  EXPECT_EQ(canonical_query({{"b", "2"}, {"a", "y"}, {"a", "x"}}), "a=x&a=y&b=2");
}

TEST(s3_signer, session_token_is_sent_and_signed) {
  s3_credentials creds = example_creds;
  creds.session_token = "token/with+chars";
  s3_request_to_sign req{"GET", "/k", {}, {}, empty_payload_sha256};
  sigv4_parts p = sign_request(req, creds, "us-east-1", example_host, example_date);
  EXPECT_EQ(p.signed_headers, "host;x-amz-content-sha256;x-amz-date;x-amz-security-token");
  EXPECT_EQ(p.authorization.find(creds.secret_access_key), std::string::npos);
  EXPECT_EQ(p.authorization.find(creds.session_token), std::string::npos);
}

TEST(s3_signer, header_names_and_values_are_normalized) {
  s3_request_to_sign a{"GET", "/k", {}, {{"X-Amz-Meta-A", "  two   words "}}, empty_payload_sha256};
  s3_request_to_sign b{"GET", "/k", {}, {{"x-amz-meta-a", "two words"}}, empty_payload_sha256};
  EXPECT_EQ(sign_request(a, example_creds, "us-east-1", example_host, example_date).signature,
            sign_request(b, example_creds, "us-east-1", example_host, example_date).signature);
}

TEST(s3_signer, amz_date) {
  EXPECT_EQ(amz_date_from_unix(1369353600), "20130524T000000Z");
}

}  // namespace
}  // namespace weir::tier

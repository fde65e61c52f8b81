#include "subscriptions/signing_key.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>

#include "subscriptions/crypto_util.h"

namespace weir::subscriptions {
namespace {

std::shared_ptr<const signing_key> fresh_key() {
  auto k = signing_key::generate();
  EXPECT_TRUE(k.has_value());
  return *k;
}

TEST(signing_key, signs_and_verifies) {
  auto k = fresh_key();
  auto pub = base64url_decode(k->public_x());
  ASSERT_TRUE(pub.has_value());
  ASSERT_EQ(pub->size(), 32u);
  std::string sig = k->sign("hello");
  EXPECT_EQ(sig.size(), 64u);
  EXPECT_TRUE(signing_key::verify(*pub, "hello", sig));
  EXPECT_FALSE(signing_key::verify(*pub, "hellp", sig));
  sig[3] ^= 1;
  EXPECT_FALSE(signing_key::verify(*pub, "hello", sig));
}

// PROTOCOL.md 7.1: t=<timestamp>,kid=<key-id>,ed25519=<base64url signature over "<t>.<raw body>">
TEST(signing_key, webhook_signature_header_verifies_over_timestamp_dot_body) {
  auto k = fresh_key();
  std::string body = R"({"subscription_id":"s","streams":[]})";
  std::string header = k->webhook_signature(1778324210, body);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(header, m, std::regex(R"(^t=(\d+),kid=([^,]+),ed25519=([A-Za-z0-9_-]+)$)")))
      << header;
  EXPECT_EQ(m[1].str(), "1778324210");
  EXPECT_EQ(m[2].str(), k->kid());
  auto sig = base64url_decode(m[3].str());
  ASSERT_TRUE(sig.has_value());
  auto pub = *base64url_decode(k->public_x());
  EXPECT_TRUE(signing_key::verify(pub, "1778324210." + body, *sig));
  EXPECT_FALSE(signing_key::verify(pub, body, *sig));
  EXPECT_FALSE(signing_key::verify(pub, "1778324211." + body, *sig));
}

// PROTOCOL.md 6.5 / RFC 7638: kid is derived from the key.
TEST(signing_key, kid_is_the_jwk_thumbprint) {
  auto k = fresh_key();
  std::string canonical = R"({"crv":"Ed25519","kty":"OKP","x":")" + k->public_x() + R"("})";
  EXPECT_EQ(k->kid(), "ds_" + base64url_encode(sha256(canonical)));
  EXPECT_NE(fresh_key()->kid(), k->kid());
}

TEST(signing_key, jwks_lists_the_public_key) {
  auto k = fresh_key();
  simdjson::dom::parser p;
  simdjson::padded_string s(k->jwks_json());
  auto doc = p.parse(s);
  ASSERT_EQ(doc.error(), simdjson::SUCCESS);
  simdjson::dom::array keys = doc["keys"];
  ASSERT_EQ(keys.size(), 1u);
  auto key = keys.at(0);
  EXPECT_EQ(std::string_view(key["kty"]), "OKP");
  EXPECT_EQ(std::string_view(key["crv"]), "Ed25519");
  EXPECT_EQ(std::string_view(key["alg"]), "EdDSA");
  EXPECT_EQ(std::string_view(key["use"]), "sig");
  EXPECT_EQ(std::string_view(key["kid"]), k->kid());
  EXPECT_EQ(std::string_view(key["x"]), k->public_x());
  EXPECT_EQ(key["d"].error(), simdjson::NO_SUCH_FIELD);  // never the private part
}

TEST(signing_key, persists_across_loads_in_a_created_directory) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("weir-signing-" + to_hex(random_bytes(6))) / "nested";
  auto first = signing_key::load_or_create(dir.string());
  ASSERT_TRUE(first.has_value()) << first.err().reason;
  auto second = signing_key::load_or_create(dir.string());
  ASSERT_TRUE(second.has_value()) << second.err().reason;
  EXPECT_EQ((*first)->kid(), (*second)->kid());
  auto pub = *base64url_decode((*first)->public_x());
  EXPECT_TRUE(signing_key::verify(pub, "m", (*second)->sign("m")));
  struct stat st {};
  ASSERT_EQ(::stat((dir / "webhook-signing.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  fs::remove_all(dir.parent_path());
}

TEST(signing_key, refuses_a_corrupt_key_file) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("weir-signing-" + to_hex(random_bytes(6)));
  fs::create_directories(dir);
  {
    std::FILE* f = std::fopen((dir / "webhook-signing.key").c_str(), "w");
    std::fputs("not a key", f);
    std::fclose(f);
  }
  auto k = signing_key::load_or_create(dir.string());
  EXPECT_FALSE(k.has_value());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir::subscriptions

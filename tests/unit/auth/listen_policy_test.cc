#include "auth/listen_policy.h"

#include <gtest/gtest.h>

namespace weir::auth {
namespace {

TEST(listen_policy, loopback_addresses) {
  for (const char* h :
       {"127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.1", "localhost"}) {
    EXPECT_TRUE(is_loopback_host(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.1", "128.0.0.1", "::ffff:10.0.0.1",
                        "example.com", "localhost.example.com", "", "127.0.0.1.nip.io"}) {
    EXPECT_FALSE(is_loopback_host(h)) << h;
  }
}

TEST(listen_policy, off_only_on_loopback_unless_insecure_no_auth) {
  EXPECT_EQ(listen_refusal("127.0.0.1", false, false), "");
  EXPECT_EQ(listen_refusal("0.0.0.0", true, false), "");
  EXPECT_EQ(listen_refusal("0.0.0.0", false, true), "");
  std::string why = listen_refusal("0.0.0.0", false, false);
  EXPECT_NE(why.find("refusing to listen on 0.0.0.0 without access control"), std::string::npos) << why;
  EXPECT_NE(why.find("--insecure-no-auth"), std::string::npos) << why;
  EXPECT_NE(listen_refusal("10.1.2.3", false, false), "");
}

}  // namespace
}  // namespace weir::auth

// weir-auth-bench: nanoseconds per authorizer::check() on one core for the request kinds that matter,
// next to the peer measured in the same run: what the node does for the same request with auth off
// (only the query-token scan). Keys are made at start (tests/unit/auth/test_keys.h).
//   - off:           strip_query_token() alone
//   - api-key:       SHA-256 of the token, hash lookup, constant-time compare, scope match
//   - jwt-cached:    a JWT this core verified before (SHA-256, cache lookup, scope match)
//   - jwt-verify-*:  the signature and claim check a JWT costs on its first use per core
//
//   weir-auth-bench --iterations 20000
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "auth/authorizer.h"
#include "unit/auth/test_keys.h"

namespace {

using namespace weir;
using clock_type = std::chrono::steady_clock;

template <class F>
double ns_per_call(int iterations, F&& f) {
  for (int i = 0; i < iterations / 10 + 1; ++i) f();  // warm up
  auto start = clock_type::now();
  for (int i = 0; i < iterations; ++i) f();
  return std::chrono::duration<double, std::nano>(clock_type::now() - start).count() / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"weir-auth-bench: the cost of the access check per request"};
  int iterations = 20'000;
  app.add_option("--iterations", iterations, "Calls per case")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  auth::test_support::test_key ed("EdDSA", "ed"), ec("ES256", "ec"), rsa("RS256", "rsa");
  const std::string jwks_path = "/tmp/weir-auth-bench-" + std::to_string(::getpid()) + ".json";
  {
    std::FILE* f = std::fopen(jwks_path.c_str(), "w");
    std::string text = auth::test_support::jwks_of({ed.jwk(), ec.jwk(), rsa.jwk()});
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  const std::string key = "wk_bench-key-0123456789abcdefghijklmnopqrstuvw";
  auth::auth_settings s;
  for (int i = 0; i < 100; ++i) {  // a realistic table: the key among 100
    auth::api_key k;
    k.hash = auth::sha256(i == 42 ? key : key + std::to_string(i));
    auth::scope_rule r;
    (void)auth::parse_prefix("/v1/stream/tenant-" + std::to_string(i) + "/", r);
    r.ops = static_cast<auth::op_set>(auth::op::read) | static_cast<auth::op_set>(auth::op::write);
    k.granted.rules.push_back(r);
    s.api_keys.push_back(k);
  }
  s.jwks_file = jwks_path;
  s.jwt = {"https://issuer.test", "weir", 30};
  auto made = auth::authorizer::create(s, 1);
  std::remove(jwks_path.c_str());
  if (!made) {
    std::fprintf(stderr, "%s\n", made.err().reason.c_str());
    return 1;
  }
  auth::authorizer& a = **made;
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::string claims =
      auth::test_support::claims(now_s + 3600, R"("scope":"read,write:/v1/stream/tenant-42/")");
  const std::string path = "/v1/stream/tenant-42/orders";

  // A request as the engine hands it over.
  auto request_with = [&](const std::string& token, http::request_head& head, std::string& value) {
    head = http::request_head{};
    head.method = http::method::post;
    head.path = path;
    head.target = path;
    value = "Bearer " + token;
    head.headers[0] = {"Authorization", value};
    head.headers[1] = {"Content-Type", "application/json"};
    head.header_count = 2;
    return http::request{&head, "{}"};
  };
  auto check_case = [&](const std::string& name, const std::string& token, bool expect_ok) {
    http::request_head head;
    std::string value;
    http::request req = request_with(token, head, value);
    std::optional<auth::stripped_request> stripped;
    auth::decision d = a.check(req, 0, now_s * 1000, stripped);
    if ((d.error == protocol::errc::ok) != expect_ok) {
      std::fprintf(stderr, "%s: unexpected decision (%s)\n", name.c_str(), std::string(d.detail).c_str());
      std::exit(1);
    }
    double ns = ns_per_call(iterations, [&] {
      stripped.reset();
      a.check(req, 0, now_s * 1000, stripped);
    });
    fmt::print("{:<22} {:>10.0f} ns/request\n", name, ns);
  };

  http::request_head off_head;
  std::string off_value;
  http::request off_req = request_with(key, off_head, off_value);
  fmt::print("{:<22} {:>10.0f} ns/request  (auth off: the query-token scan only)\n", "off",
             ns_per_call(iterations, [&] {
               std::optional<auth::stripped_request> st;
               auth::strip_query_token(off_req, st);
             }));
  fmt::print("{:<22} {:>10.0f} ns/request  (of which: SHA-256 of the token)\n", "sha256",
             ns_per_call(iterations, [&] { (void)auth::sha256(key); }));
  fmt::print("{:<22} {:>10.0f} ns/request  (of which: decoding the path)\n", "canonical path",
             ns_per_call(iterations, [&] { (void)auth::canonical_path(path); }));
  check_case("api-key", key, true);
  check_case("jwt-cached (EdDSA)", ed.token(claims), true);
  check_case("unknown api key", "wk_nobody", false);
  auto keys = auth::parse_jwks(auth::test_support::jwks_of({ed.jwk(), ec.jwk(), rsa.jwk()}));
  for (const auth::test_support::test_key* k : {&ed, &ec, &rsa}) {
    const std::string token = k->token(claims);
    fmt::print(
        "{:<22} {:>10.0f} ns/token (first use on a core)\n", "jwt-verify " + k->alg(),
        ns_per_call(iterations / 10 + 1, [&] { (void)auth::verify_jwt(token, **keys, s.jwt, now_s); }));
  }
  return 0;
}

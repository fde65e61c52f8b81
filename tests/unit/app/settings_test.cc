#include "app/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "app/serve_command.h"
#include "auth/crypto.h"

namespace weir::app {
namespace {

// The files write_temp wrote, removed when the test process exits (they were left in /tmp, which CI
// shares with everything else on the machine).
struct temp_files {
  std::vector<std::string> paths;
  ~temp_files() {
    for (const auto& p : paths) std::remove(p.c_str());
  }
};

std::string write_temp(const std::string& text) {
  static temp_files written;
  std::string path = ::testing::TempDir() + "weir_config_" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml";
  std::ofstream(path) << text;
  written.paths.push_back(path);
  return path;
}

TEST(serve_config, defaults_are_valid) {
  serve_config c;
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 4437);
  EXPECT_EQ(c.data_dir, "./weir-data");
  EXPECT_EQ(c.body_limit, 64ull << 20);
  EXPECT_NO_THROW(validate(c));
}

TEST(serve_config, listen) {
  serve_config c;
  apply_listen(c, "0.0.0.0:8080");
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 8080);
  apply_listen(c, "[::1]:9");
  EXPECT_EQ(c.host, "::1");
  for (const char* bad : {"", "8080", ":80", "host:", "host:99999", "host:8o"}) {
    EXPECT_THROW(apply_listen(c, bad), config_error) << bad;
  }
}

TEST(serve_config, old_underscore_keys_still_load) {
  serve_config c;
  load_config_file(c, write_temp("listen = \"127.0.0.1:5000\"\ndata_dir = \"/tmp/x\"\nthreads = 3\n"
                                 "long_poll_timeout_ms = 500\nbody_limit = 1024\nlog_level = \"warn\"\n"));
  EXPECT_EQ(c.port, 5000);
  EXPECT_EQ(c.data_dir, "/tmp/x");
  EXPECT_EQ(c.threads, 3u);
  EXPECT_EQ(c.long_poll_timeout_ms, 500);
  EXPECT_EQ(c.body_limit, 1024u);
  EXPECT_EQ(c.log_level, "warn");
  EXPECT_NO_THROW(validate(c));
}

TEST(serve_config, rejects_unknown_and_invalid_settings) {
  serve_config c;
  EXPECT_THROW(load_config_file(c, write_temp("colour = \"blue\"\n")), config_error);
  EXPECT_THROW(load_config_file(c, write_temp("threads = \"two\"\n")), config_error);
  EXPECT_THROW(load_config_file(c, write_temp("threads = -1\n")), config_error);
  EXPECT_THROW(load_config_file(c, write_temp("this is not toml\n")), config_error);
  EXPECT_THROW(load_config_file(c, "/nonexistent/weir.toml"), config_error);
  serve_config bad_level;
  bad_level.log_level = "loud";
  EXPECT_THROW(validate(bad_level), config_error);
  serve_config bad_poll;
  bad_poll.long_poll_timeout_ms = 0;
  EXPECT_THROW(validate(bad_poll), config_error);
}

// For every setting: a valid value other than its default, as a flag's text and as a TOML literal, and
// the other settings (by their samples) without which it is not valid.
// A new setting without a sample here fails every_setting_has_a_sample.
struct sample {
  std::string flag;
  std::string toml;
  std::vector<std::string> needs = {};
};
const std::map<std::string, sample>& samples() {
  static const std::map<std::string, sample> m = {
      {"listen", {"0.0.0.0:5001", "\"0.0.0.0:5001\""}},
      {"data-dir", {"/tmp/weir \"x\"\\d\u00e9\t", "\"/tmp/weir \\\"x\\\"\\\\d\u00e9\\t\""}},
      {"threads", {"3", "3"}},
      {"fsync", {"interval:5", "\"interval:5\""}},
      {"durable", {"false", "false"}},
      {"prepare-segments", {"false", "false"}},
      {"long-poll-timeout-ms", {"500", "500"}},
      {"body-limit", {"1024", "1024"}},
      {"read-chunk-bytes", {"4096", "4096"}},
      {"sse-keep-alive-ms", {"250", "250"}},
      {"sse-close-after-ms", {"9000", "9000"}},
      {"max-path-length", {"300", "300"}},
      {"hot-bytes", {"1048576", "1048576"}},
      {"segment-bytes", {"131072", "131072"}},
      {"checkpoint-bytes", {"0", "0"}},
      {"max-in-flight-bytes", {"1073741824", "1073741824"}},
      {"body-budget-bytes", {"0", "0"}},
      {"read-bytes-per-turn", {"65536", "65536"}},
      {"max-stream-queue-bytes", {"4194304", "4194304"}},
      {"allow-loopback-webhooks", {"true", "true"}},
      {"webhook-allow-hosts", {"hooks.corp,intranet", "\"hooks.corp,intranet\""}},
      {"max-webhook-retries", {"5", "5"}},
      {"max-subscriptions", {"7", "7"}},
      {"max-subscription-pattern-bytes", {"64", "64"}},
      {"public-url", {"https://streams.example:8443", "\"https://streams.example:8443\""}},
      {"cors-allowed-origins",
       {"https://app.example,http://127.0.0.1:8000", "\"https://app.example,http://127.0.0.1:8000\""}},
      {"log-level", {"debug", "\"debug\""}},
      {"log-format", {"json", "\"json\""}},
      {"insecure-no-auth", {"true", "true"}},
      {"jwks-file", {"/etc/weir/jwks.json", "\"/etc/weir/jwks.json\""}},
      {"jwt-issuer", {"https://issuer.example", "\"https://issuer.example\""}},
      {"jwt-audience", {"weir-prod", "\"weir-prod\""}},
      {"jwt-leeway-s", {"5", "5"}},
      {"query-token-max-ttl-s", {"60", "60"}},
      {"metrics", {"false", "false"}},
      {"access-log", {"/var/log/weir/access.log", "\"/var/log/weir/access.log\""}},
      {"deleted-path-hold-ms", {"60000", "60000"}},
      {"max-streams", {"10", "10"}},
      {"group-commit-gather-us", {"500", "500"}},
      {"max-connections", {"5000", "5000"}},
      {"max-connections-per-client", {"64", "64"}},
      {"descriptor-reserve", {"512", "512"}},
      {"tls-cert", {"/etc/weir/tls/cert.pem", "\"/etc/weir/tls/cert.pem\""}},
      {"tls-key", {"/etc/weir/tls/key.pem", "\"/etc/weir/tls/key.pem\""}},
      {"tls-ktls", {"true", "true"}},
      {"http2", {"false", "false"}},
      {"http2-max-streams", {"100", "100"}},
      {"http2-max-header-list-bytes", {"16384", "16384"}},
      {"http2-stream-window-bytes", {"65535", "65535"}},
      {"http2-connection-window-bytes", {"1048576", "1048576"}},
      {"http2-connection-queue-bytes", {"8388608", "8388608"}},
      {"cold", {"s3://weir-data/node-1", "\"s3://weir-data/node-1\""}},
      {"s3-region", {"eu-west-3", "\"eu-west-3\""}},
      {"s3-endpoint", {"http://127.0.0.1:4568", "\"http://127.0.0.1:4568\""}},
      {"s3-access-key-id", {"AKIDEXAMPLE", "\"AKIDEXAMPLE\""}},
      {"s3-secret-access-key", {"wJalrXUtnFEMI/K7MDENG", "\"wJalrXUtnFEMI/K7MDENG\""}},
      {"s3-session-token", {"FwoGZXIvYXdzEXAMPLE", "\"FwoGZXIvYXdzEXAMPLE\""}},
      {"local-bytes", {"1073741824", "1073741824", {"cold"}}},
      {"cold-keep-bytes", {"536870912", "536870912", {"cold", "local-bytes"}}},
      {"cold-object-bytes", {"1048576", "1048576"}},
      {"cold-max-age-ms", {"1000", "1000"}},
      {"cold-gc-grace-ms", {"60000", "60000"}},
      {"cold-snapshot-interval-ms", {"5000", "5000"}},
      {"restore", {"true", "true"}},
      {"node-id", {"2", "2", {"peer-listen", "peers"}}},
      {"peer-listen", {"127.0.0.1:5438", "\"127.0.0.1:5438\"", {"node-id", "peers"}}},
      {"peers",
       {"1=127.0.0.1:5437,2=127.0.0.1:5438,3=127.0.0.1:5439",
        "\"1=127.0.0.1:5437,2=127.0.0.1:5438,3=127.0.0.1:5439\"",
        {"node-id", "peer-listen"}}},
      {"raft-groups", {"16", "16"}},
      {"raft-lanes", {"4", "4"}},
      {"balance-leaders", {"false", "false"}},
      {"election-timeout-ms", {"3000", "3000"}},
      {"join", {"true", "true", {"node-id", "peer-listen", "peers"}}},
      {"raft-snapshot-entries", {"1000", "1000"}},
      {"raft-snapshot-bytes", {"1048576", "1048576"}},
      {"raft-snapshot-trailing", {"64", "64"}},
      {"raft-segment-bytes", {"1048576", "1048576"}},
      {"raft-proposal-bytes", {"1048576", "1048576"}},
      {"fork-sweep-secs", {"5", "5"}},
      {"peer-tls-cert",
       {"/etc/weir/peer/node.crt",
        "\"/etc/weir/peer/node.crt\"",
        {"node-id", "peer-listen", "peers", "peer-tls-key", "peer-tls-ca"}}},
      {"peer-tls-key",
       {"/etc/weir/peer/node.key",
        "\"/etc/weir/peer/node.key\"",
        {"node-id", "peer-listen", "peers", "peer-tls-cert", "peer-tls-ca"}}},
      {"peer-tls-ca",
       {"/etc/weir/peer/ca.pem",
        "\"/etc/weir/peer/ca.pem\"",
        {"node-id", "peer-listen", "peers", "peer-tls-cert", "peer-tls-key"}}},
  };
  return m;
}

// `weir serve ARGS` parsed by the real option set, resolved to the effective configuration.
serve_config parse_serve(std::vector<std::string> args) {
  CLI::App app;
  serve_options opts(app);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last-first
  app.parse(args);
  return opts.resolve();
}

TEST(serve_config, every_setting_has_a_sample_and_a_dash_name) {
  for (const setting& s : settings()) {
    EXPECT_TRUE(samples().count(std::string(s.name))) << s.name;
    EXPECT_EQ(std::string(s.name).find('_'), std::string::npos) << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_EQ(find_setting(s.name), &s);
  }
  EXPECT_EQ(samples().size(), settings().size());
}

TEST(serve_config, flag_and_toml_give_the_same_result_for_every_setting) {
  const serve_config defaults;
  for (const setting& s : settings()) {
    if (s.secret) continue;  // settings file only: secret_settings_are_read_from_the_file_only
    const sample& v = samples().at(std::string(s.name));
    std::vector<std::string> args = {"--" + std::string(s.name), v.flag};
    if (s.name != "threads") args.insert(args.end(), {"--threads", "1"});  // not the CPU count
    std::string toml =
        std::string(s.name) + " = " + v.toml + "\n" + (s.name == "threads" ? "" : "threads = 1\n");
    for (const std::string& other : v.needs) {
      args.insert(args.end(), {"--" + other, samples().at(other).flag});
      toml += other + " = " + samples().at(other).toml + "\n";
    }
    serve_config by_flag = parse_serve(args);
    serve_config by_toml;
    load_config_text(by_toml, toml);
    EXPECT_NO_THROW(validate(by_toml)) << s.name;
    EXPECT_EQ(s.access.get(by_flag), s.access.get(by_toml)) << s.name;
    EXPECT_NE(s.access.get(by_flag), s.access.get(defaults)) << s.name << ": the sample is the default";
    EXPECT_EQ(print_config(by_flag), print_config(by_toml)) << s.name;
    // The old underscore key sets the same setting.
    std::string old(s.name);
    std::replace(old.begin(), old.end(), '-', '_');
    serve_config by_old;
    load_config_text(by_old, old + " = " + v.toml + "\n");
    EXPECT_EQ(s.access.get(by_old), s.access.get(by_toml)) << old;
  }
}

TEST(serve_config, flags_override_the_file_whatever_their_order) {
  std::string path = write_temp("data-dir = \"/from/file\"\nthreads = 2\nbody-limit = 4096\n");
  serve_config c = parse_serve({"--threads", "3", "--config", path, "--long-poll-timeout-ms", "700"});
  EXPECT_EQ(c.data_dir, "/from/file");
  EXPECT_EQ(c.threads, 3u);
  EXPECT_EQ(c.body_limit, 4096u);
  EXPECT_EQ(c.long_poll_timeout_ms, 700);
  EXPECT_EQ(c.port, 4437);
}

TEST(serve_config, print_config_round_trips_through_the_file_and_the_command) {
  serve_config all;  // every setting away from its default
  for (const setting& s : settings()) apply_flag(all, s, samples().at(std::string(s.name)).flag);
  // Secrets are never printed, so they cannot round-trip (secret_settings_are_read_from_the_file_only...).
  for (const setting& s : settings()) {
    if (s.secret) s.access.set(all, s.access.get(serve_config{}));
  }
  ASSERT_NO_THROW(validate(all));
  std::string printed = print_config(all);
  serve_config back;
  load_config_text(back, printed);
  EXPECT_EQ(print_config(back), printed);
  for (const setting& s : settings()) EXPECT_EQ(s.access.get(back), s.access.get(all)) << s.name;

  // The same through `weir serve --config FILE`.
  serve_config via_command = parse_serve({"--config", write_temp(printed)});
  EXPECT_EQ(print_config(via_command), printed);

  // And the defaults (threads resolved by the command) round-trip too.
  serve_config defaults = parse_serve({});
  EXPECT_NE(defaults.threads, 0u);
  serve_config reread;
  load_config_text(reread, print_config(defaults));
  EXPECT_EQ(print_config(reread), print_config(defaults));
}

// The message of the config_error thrown by f, or "" if none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

TEST(serve_config, bad_values_name_the_setting) {
  for (const setting& s : settings()) {
    const std::string name(s.name);
    const std::string wrong_type = s.access.kind == setting_kind::text ? "3" : "\"three\"";
    serve_config c;
    std::string e = error_of([&] { load_config_text(c, name + " = " + wrong_type + "\n"); });
    EXPECT_NE(e.find(": " + name + ": must be "), std::string::npos) << name << ": " << e;
    if (s.access.kind != setting_kind::text) {
      e = error_of([&] { parse_serve({"--" + name, "three"}); });
      EXPECT_EQ(e.rfind(name + ": ", 0), 0u) << name << ": " << e;
    }
    if (s.access.kind == setting_kind::integer) {
      e = error_of([&] { parse_serve({"--" + name, "-1"}); });
      EXPECT_EQ(e.rfind(name + ": must not be negative", 0), 0u) << name << ": " << e;
      e = error_of([&] { load_config_text(c, name + " = -1\n"); });
      EXPECT_NE(e.find(name + ": must not be negative"), std::string::npos) << name << ": " << e;
      if (s.min > 0) {
        e = error_of([&] { parse_serve({"--" + name, std::to_string(s.min - 1)}); });
        EXPECT_EQ(e.rfind(name + ": ", 0), 0u) << name << ": " << e;
      }
      if (std::min(s.max, s.access.type_max) < UINT64_MAX) {
        e = error_of([&] {
          parse_serve({"--" + name, std::to_string(std::min(s.max, s.access.type_max) + 1)});
        });
        EXPECT_EQ(e.rfind(name + ": ", 0), 0u) << name << ": " << e;
      }
    }
  }
  // Checks beyond a range name their setting too.
  EXPECT_EQ(error_of([] { parse_serve({"--fsync", "sometimes"}); }).rfind("fsync: ", 0), 0u);
  EXPECT_EQ(error_of([] { parse_serve({"--log-level", "loud"}); }).rfind("log-level: ", 0), 0u);
  EXPECT_EQ(error_of([] { parse_serve({"--data-dir", ""}); }).rfind("data-dir: ", 0), 0u);
  EXPECT_EQ(error_of([] { parse_serve({"--checkpoint-bytes", "10"}); }).rfind("checkpoint-bytes: ", 0), 0u);
  EXPECT_EQ(error_of([] {
              parse_serve({"--max-in-flight-bytes", "10"});
            }).rfind("max-in-flight-bytes: ", 0),
            0u);
  EXPECT_EQ(error_of([] { parse_serve({"--listen", "nowhere"}); }).rfind("listen: ", 0), 0u);
  EXPECT_EQ(error_of([] { parse_serve({"--listen", "[::1]:80"}); }).rfind("listen: ", 0), 0u);
  EXPECT_EQ(error_of([] { parse_serve({"--listen", "example.com:80"}); }).rfind("listen: ", 0), 0u);
  EXPECT_NO_THROW(parse_serve({"--listen", "localhost:0"}));
  EXPECT_EQ(error_of([] { parse_serve({"--durable", "yes"}); }).rfind("durable: ", 0), 0u);
}

TEST(serve_config, unknown_and_repeated_keys_are_errors_that_say_so) {
  serve_config c;
  std::string e = error_of([&] { load_config_text(c, "colour = \"blue\"\n"); });
  EXPECT_NE(e.find("unknown setting 'colour'"), std::string::npos) << e;
  e = error_of([&] { load_config_text(c, "[server]\ndata-dir = \"x\"\n"); });
  EXPECT_NE(e.find("unknown setting 'server'"), std::string::npos) << e;
  e = error_of([&] { load_config_text(c, "data_dir = \"a\"\ndata-dir = \"b\"\n"); });
  EXPECT_NE(e.find("'data-dir' is set twice"), std::string::npos) << e;
}

// [[auth.api-keys]]: the one structured setting (docs/security.md), read, checked and printed back.
TEST(serve_config, api_keys_load_from_the_auth_table_and_print_back) {
  const std::string hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  serve_config c;
  load_config_text(c,
                   "listen = \"0.0.0.0:4437\"\n"
                   "[[auth.api-keys]]\nname = \"ingest\"\nhash = \"" +
                       hash +
                       "\"\n"
                       "scope = [{ prefix = \"/v1/stream/a\", ops = [\"read\", \"write\"] },\n"
                       "         { prefix = \"/v1/stream/t-*\", ops = [\"delete\"] }]\n"
                       "[[auth.api-keys]]\nhash = \"" +
                       std::string(64, 'A') + "\"\nscope = []\n");
  ASSERT_EQ(c.api_keys.size(), 2u);
  EXPECT_EQ(c.api_keys[0].name, "ingest");
  EXPECT_EQ(auth::to_hex(c.api_keys[0].hash), hash);
  ASSERT_EQ(c.api_keys[0].granted.rules.size(), 2u);
  EXPECT_TRUE(c.api_keys[0].granted.allows("/v1/stream/a/x", auth::op::write));
  EXPECT_FALSE(c.api_keys[0].granted.allows("/v1/stream/ab", auth::op::read));
  EXPECT_TRUE(c.api_keys[0].granted.allows("/v1/stream/t-1", auth::op::remove));
  EXPECT_TRUE(c.api_keys[1].granted.rules.empty());
  const std::string printed = print_config(c);
  EXPECT_NE(printed.find("[[auth.api-keys]]\nname = \"ingest\"\nhash = \"" + hash +
                         "\"\n"
                         "scope = [{ prefix = \"/v1/stream/a\", ops = [\"read\", \"write\"] }, "
                         "{ prefix = \"/v1/stream/t-*\", ops = [\"delete\"] }]\n"),
            std::string::npos)
      << printed;
  serve_config back;
  load_config_text(back, printed);
  EXPECT_EQ(print_config(back), printed);
  ASSERT_EQ(back.api_keys.size(), 2u);
}

TEST(serve_config, bad_api_keys_name_what_is_wrong) {
  const std::string hash = std::string(64, 'a');
  auto load = [](const std::string& toml) {
    serve_config c;
    return error_of([&] { load_config_text(c, toml); });
  };
  auto key = [&](const std::string& body) { return "[[auth.api-keys]]\n" + body; };
  EXPECT_NE(load(key("hash = \"wk_the-key-itself\"\nscope = []\n")).find("64 hex digits"), std::string::npos);
  EXPECT_NE(load(key("scope = []\n")).find("hash missing"), std::string::npos);
  EXPECT_NE(
      load(key("hash = \"" + hash + "\"\nscope = [{ prefix = \"v1\", ops = [\"read\"] }]\n")).find("'v1'"),
      std::string::npos);
  EXPECT_NE(load(key("hash = \"" + hash + "\"\nscope = [{ prefix = \"/v1/%61\", ops = [\"read\"] }]\n"))
                .find("decoded"),
            std::string::npos);
  EXPECT_NE(
      load(key("hash = \"" + hash + "\"\nscope = [{ prefix = \"/v1\", ops = [\"fly\"] }]\n")).find("ops are"),
      std::string::npos);
  EXPECT_NE(load(key("hash = \"" + hash + "\"\nscope = [{ prefix = \"/v1\" }]\n")).find("each entry"),
            std::string::npos);
  EXPECT_NE(load(key("hash = \"" + hash + "\"\nkey = \"x\"\n")).find("unknown or mistyped member 'key'"),
            std::string::npos);
  EXPECT_NE(load("[auth]\nkeys = 1\n").find("unknown auth setting 'keys'"), std::string::npos);
  EXPECT_NE(load("auth = 1\n").find("'auth' must be a table"), std::string::npos);
}

TEST(serve_config, a_boolean_flag_alone_means_true) {
  EXPECT_TRUE(parse_serve({"--insecure-no-auth"}).insecure_no_auth);
  EXPECT_TRUE(parse_serve({"--insecure-no-auth", "true"}).insecure_no_auth);
  EXPECT_FALSE(parse_serve({"--insecure-no-auth", "false"}).insecure_no_auth);
  EXPECT_FALSE(parse_serve({}).insecure_no_auth);
  serve_config c = parse_serve({"--insecure-no-auth", "--jwt-leeway-s", "7"});
  EXPECT_TRUE(c.insecure_no_auth);
  EXPECT_EQ(c.jwt_leeway_s, 7u);
  EXPECT_EQ(error_of([] { parse_serve({"--jwt-leeway-s", "301"}); }).rfind("jwt-leeway-s: ", 0), 0u);
}

// Cluster mode: node-id, peer-listen, peers and raft-groups land in serve_config::cluster.
TEST(serve_config, cluster_settings_fill_the_cluster_options) {
  serve_config alone = parse_serve({});
  EXPECT_FALSE(alone.cluster.enabled());
  EXPECT_EQ(alone.cluster.groups, 64u);
  EXPECT_TRUE(alone.cluster.balance_leaders);
  EXPECT_FALSE(alone.cluster.join);

  serve_config c = parse_serve({"--node-id", "3", "--peer-listen", "0.0.0.0:5439", "--peers",
                                "1=127.0.0.1:5437,2=127.0.0.1:5438,3=127.0.0.1:5439", "--raft-groups", "8"});
  EXPECT_TRUE(c.cluster.enabled());
  EXPECT_EQ(c.cluster.node_id, 3u);
  EXPECT_EQ(c.cluster.peer_listen, (cluster::peer_address{"0.0.0.0", 5439}));
  ASSERT_EQ(c.cluster.peers.size(), 3u);
  EXPECT_EQ(c.cluster.peers.at(2), (cluster::peer_address{"127.0.0.1", 5438}));
  EXPECT_EQ(c.cluster.groups, 8u);

  const std::string printed = print_config(c);
  EXPECT_NE(printed.find("\nnode-id = 3\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("\npeer-listen = \"0.0.0.0:5439\"\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("\npeers = \"1=127.0.0.1:5437,2=127.0.0.1:5438,3=127.0.0.1:5439\"\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("\nraft-groups = 8\n"), std::string::npos) << printed;
  serve_config back;
  load_config_text(back, printed);
  EXPECT_EQ(back.cluster.peers, c.cluster.peers);
  EXPECT_EQ(back.cluster.peer_listen, c.cluster.peer_listen);
}

TEST(serve_config, cluster_settings_are_checked_together) {
  const std::string peers = "1=127.0.0.1:5437,2=127.0.0.1:5438,3=127.0.0.1:5439";
  auto error = [](std::vector<std::string> args) { return error_of([&] { parse_serve(std::move(args)); }); };
  // Without node-id, a node runs alone: peers or peer-listen alone are a mistake, and the error says so.
  std::string e = error({"--peers", peers});
  EXPECT_EQ(e.rfind("peers: set without node-id; add --node-id N", 0), 0u) << e;
  e = error({"--peer-listen", "127.0.0.1:5437"});
  EXPECT_EQ(e.rfind("peer-listen: set without node-id; add --node-id N", 0), 0u) << e;
  e = error({"--join"});
  EXPECT_EQ(e.rfind("join: set without node-id", 0), 0u) << e;
  // With node-id, both are required.
  EXPECT_EQ(error({"--node-id", "1", "--peer-listen", "127.0.0.1:5437"}), "peers: required with node-id");
  EXPECT_EQ(error({"--node-id", "1", "--peers", peers}), "peer-listen: required with node-id");
  EXPECT_EQ(error({"--node-id", "4", "--peer-listen", "127.0.0.1:5440", "--peers", peers}),
            "node-id 4 is not one of the peers (1, 2, 3)");
  EXPECT_EQ(
      error({"--node-id", "1", "--peer-listen", "127.0.0.1:5438", "--peers", peers}).rfind("peer-listen ", 0),
      0u);
  // Malformed values name their setting, from a flag and from the file.
  e = error({"--peers", "1=127.0.0.1:5437,1=127.0.0.1:5438"});
  EXPECT_EQ(e, "peers: node 1 is listed twice");
  e = error({"--peer-listen", "5437"});
  EXPECT_EQ(e.rfind("peer-listen: ", 0), 0u) << e;
  serve_config c;
  e = error_of([&] { load_config_text(c, "peers = \"1=nowhere\"\n", "weir.toml"); });
  EXPECT_EQ(e.rfind("config weir.toml: peers: node 1: expected HOST:PORT", 0), 0u) << e;
  // The peers' port is not the HTTP port.
  e = error(
      {"--listen", "127.0.0.1:5437", "--node-id", "1", "--peer-listen", "127.0.0.1:5437", "--peers", peers});
  EXPECT_EQ(e, "peer-listen: must differ from listen (HTTP)");
  EXPECT_EQ(error({"--raft-groups", "0"}).rfind("raft-groups: between 1 and 4096", 0), 0u);
  EXPECT_EQ(error({"--raft-groups", "4097"}).rfind("raft-groups: between 1 and 4096", 0), 0u);
}

TEST(serve_config, help_lists_the_cluster_settings) {
  CLI::App app;
  serve_options opts(app);
  const std::string help = app.help();
  for (const char* flag : {"--node-id", "--peer-listen", "--peers", "--raft-groups", "--raft-lanes"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag << "\n" << help;
  }
}

// public-url goes into Location, callback_url and jwks_url: only scheme://host[:port] is taken.
TEST(serve_config, a_public_url_that_is_not_a_plain_origin_stops_the_start) {
  serve_config bad;
  for (const char* url : {"streams.example", "https://streams.example/", "https://a@b", "javascript:x"}) {
    bad.public_url = url;
    EXPECT_THROW(validate(bad), config_error) << url;
  }
  serve_config good;
  good.public_url = "https://streams.example:8443";
  EXPECT_NO_THROW(validate(good));
}

TEST(serve_config, secret_settings_are_read_from_the_file_only_and_never_printed) {
  std::size_t secrets = 0;
  for (const setting& s : settings()) {
    if (!s.secret) continue;
    ++secrets;
    const sample& v = samples().at(std::string(s.name));
    // Not a flag: a command line is visible to every user of the machine.
    EXPECT_THROW(parse_serve({"--" + std::string(s.name), v.flag}), CLI::ParseError) << s.name;
    serve_config c;
    load_config_text(c, std::string(s.name) + " = " + v.toml + "\n");
    EXPECT_NE(s.access.get(c), s.access.get(serve_config{})) << s.name;
    const std::string printed = print_config(c);
    EXPECT_EQ(printed.find(v.flag), std::string::npos) << s.name << " printed";
    EXPECT_NE(printed.find("# " + std::string(s.name) + " is set (not shown)"), std::string::npos) << printed;
    EXPECT_NE(print_config(serve_config{}).find("# " + std::string(s.name) + " is not set"),
              std::string::npos);
  }
  EXPECT_EQ(secrets, 2u);  // the secret access key and the session token
}

TEST(serve_config, cold_settings_are_checked_together) {
  EXPECT_NE(error_of([] { parse_serve({"--cold", "s3://Bad_Bucket"}); }).find("cold:"), std::string::npos);
  EXPECT_NE(error_of([] {
              parse_serve({"--s3-endpoint", "ftp://x"});
            }).find("s3-endpoint:"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_serve({"--s3-region", "US East"}); }).find("s3-region:"), std::string::npos);
  // A budget needs a bucket, and room for what the tier waits for before it uploads.
  EXPECT_NE(error_of([] {
              parse_serve({"--local-bytes", "1073741824"});
            }).find("needs cold"),
            std::string::npos);
  const std::string small = error_of([] { parse_serve({"--cold", "s3://weir", "--local-bytes", "1000"}); });
  EXPECT_NE(small.find("local-bytes: at least 150994944"), std::string::npos) << small;
  EXPECT_NE(error_of([] {
              parse_serve({"--cold-keep-bytes", "1000"});
            }).find("needs cold"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        parse_serve({"--cold", "s3://weir", "--local-bytes", "150994944", "--cold-keep-bytes", "150994945"});
      }).find("cold-keep-bytes: at most local-bytes"),
      std::string::npos);
  serve_config ok = parse_serve(
      {"--cold", "s3://weir/n1", "--s3-endpoint", "http://127.0.0.1:4568", "--local-bytes", "150994944"});
  EXPECT_EQ(ok.cold, "s3://weir/n1");
  EXPECT_EQ(ok.local_bytes, 150994944u);
}

}  // namespace
}  // namespace weir::app

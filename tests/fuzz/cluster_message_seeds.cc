// Writes the seed corpus of cluster_message_fuzz: one valid cluster message per file (a forward for
// every kind of streams command and one of a subscription change, both forward_reject reasons, a
// read_request, both read_reply forms, a membership and the empty one, a leader_call, both leader_reply
// forms, a leading), five bare log entries (two streams commands, a subscription change, a membership
// addition and a removal) and group 0's snapshot part (a membership). Rerun when an encoding changes:
//   build/fuzz/tests/fuzz/cluster_message_seeds tests/fuzz/corpus/cluster_message_fuzz
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/membership.h"
#include "cluster/messages.h"
#include "streams/command_codec.h"

namespace {

using namespace weir;

streams::payload bytes(std::string s, std::uint32_t messages = 0) {
  streams::payload p;
  p.bytes = streams::make_chunk(std::move(s));
  p.messages = messages;
  return p;
}

std::vector<std::byte> entry(std::uint64_t origin, std::uint64_t ticket, const streams::command& c) {
  const std::string cmd = streams::encode(c);
  return cluster::encode_entry({origin, ticket, cluster::entry_kind::streams},
                               std::as_bytes(std::span(cmd.data(), cmd.size())));
}

std::span<const std::byte> text(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// A subscription change (subscriptions/subscription_replica.h): op 1, then one subscription_log record
// (u32 length, u32 CRC32C, JSON; this layer does not check the CRC, so a placeholder will do).
std::vector<std::byte> subscription_entry(std::uint64_t origin, std::uint64_t ticket) {
  const std::string json = R"({"op":"del","sub":"/v1/stream/sub-1"})";
  std::string payload = "\x01";
  for (int i = 0; i < 4; ++i) payload.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  payload += std::string("\x12\x34\x56\x78", 4) + json;
  return cluster::encode_entry({origin, ticket, cluster::entry_kind::subscriptions}, text(payload));
}

bool write(const std::string& dir, const std::string& name, const std::vector<std::byte>& b) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];

  streams::create_command create;
  create.path = "/v1/stream/fork";
  create.content_type = "application/json";
  create.expiry.ttl_seconds = 3600;
  create.initial = bytes("1,2,", 2);
  streams::fork_spec fork;
  fork.source = "/v1/stream/src";
  fork.offset = streams::stream_offset(42);
  fork.sub_offset = 3;
  fork.resolved.point = streams::stream_offset(42);
  fork.resolved.prefix = bytes("abc");
  fork.resolved.source_content_type = "application/json";
  fork.resolved.source_expiry.expires_at_ms = 1'700'000'060'000;
  fork.resolved.source_expiry.expires_at_text = "2023-11-14T22:14:20Z";
  fork.resolved.retained = true;
  create.fork = fork;
  create.now_ms = 1'700'000'000'123;

  streams::append_command append;
  append.path = "/v1/stream/a";
  append.content_type = "text/plain";
  append.body = bytes("hello");
  append.stream_seq = "0009";
  append.producer = streams::producer_ref{"writer-1", 7, 12};
  append.close = true;
  append.now_ms = 1'700'000'000'456;

  const std::vector<streams::command> commands = {
      create,
      append,
      streams::delete_command{"/v1/stream/d", 1'700'000'000'000, 0},
      streams::touch_command{"/v1/stream/t", 1'700'000'000'001},
      streams::expire_command{"/v1/stream/e", 1'700'000'000'002},
      streams::fork_retain_command{"/v1/stream/src", streams::stream_offset(5), 2, "text/plain",
                                   1'700'000'000'003},
      streams::fork_release_command{"/v1/stream/src"},
      streams::delete_command{"/v1/stream/held", 1'700'000'000'004, 60'000},
      // Cluster forks: a retain naming its fork (kind 10), a release by origin (11), a tombstone (12).
      streams::fork_retain_command{"/v1/stream/src", std::nullopt, 0, "", 1'700'000'000'005,
                                   "/v1/stream/fork"},
      streams::fork_release_command{"/v1/stream/src", streams::fork_origin{3, 4567}},
      streams::fork_tombstone_command{"/v1/stream/fork", streams::fork_origin{3, 4567}, 1, 1'700'000'000'006},
  };

  bool ok = true;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const auto e = entry(2, 100 + i, commands[i]);
    ok &= write(dir, "forward-" + std::to_string(i),
                cluster::encode(cluster::forward{static_cast<std::uint32_t>(i % 3), e}));
  }
  ok &= write(dir, "forward-subscriptions", cluster::encode(cluster::forward{2, subscription_entry(2, 120)}));
  ok &= write(dir, "entry-append", entry(3, 7, append));
  // A fork's create in a cluster names where its retain went (command kind 9).
  streams::create_command located = create;
  located.fork->resolved.origin = streams::fork_origin{17, 123456};
  ok &= write(dir, "entry-fork-origin", entry(2, 8, located));
  ok &= write(dir, "entry-subscriptions", subscription_entry(1, 0));
  ok &= write(dir, "entry-unticketed", entry(1, 0, streams::touch_command{"/v1/stream/t", 5}));
  const cluster::membership three{2, {{1, "10.0.0.1:5437"}, {2, "10.0.0.2:5437"}, {3, "10.0.0.3:5437"}}};
  ok &= write(dir, "entry-membership-add",
              cluster::encode_entry({2, 11, cluster::entry_kind::membership},
                                    cluster::encode_membership_change(
                                        {cluster::membership_change::op::add, 4, "10.0.0.4:5437", three})));
  ok &= write(dir, "entry-membership-remove",
              cluster::encode_entry(
                  {1, 12, cluster::entry_kind::membership},
                  cluster::encode_membership_change({cluster::membership_change::op::remove, 3, "", three})));
  ok &= write(dir, "snapshot-membership", cluster::encode_membership(three));
  ok &= write(dir, "forward_reject-not_leader",
              cluster::encode(cluster::forward_reject{104, cluster::reject_reason::not_leader, 3}));
  ok &= write(dir, "forward_reject-lost",
              cluster::encode(cluster::forward_reject{105, cluster::reject_reason::lost, 0}));
  ok &= write(dir, "read_request", cluster::encode(cluster::read_request{1, 9}));
  ok &= write(dir, "read_reply-ok", cluster::encode(cluster::read_reply{9, true, 1234, 0}));
  ok &= write(dir, "read_reply-not_leader", cluster::encode(cluster::read_reply{10, false, 0, 2}));
  // A leader call carries a subscription control request (subscriptions/control_codec.h) and its answer.
  ok &= write(dir, "leader_call", cluster::encode(cluster::leader_call{11, 5, text("\x01request bytes")}));
  ok &=
      write(dir, "leader_reply-served", cluster::encode(cluster::leader_reply{11, true, 0, text("answer")}));
  ok &= write(dir, "leader_reply-not_leader", cluster::encode(cluster::leader_reply{12, false, 3, {}}));
  ok &= write(dir, "membership",
              cluster::encode(cluster::membership_update{
                  3, {{1, "10.0.0.1:5437"}, {2, "10.0.0.2:5437"}, {4, "127.0.0.1:5440"}}}));
  ok &= write(dir, "membership-empty", cluster::encode(cluster::membership_update{}));
  ok &= write(dir, "leading", cluster::encode(cluster::leading{{{0, 7}, {5, 12}, {63, 1}}}));
  if (!ok) {
    std::fprintf(stderr, "cluster_message_seeds: cannot write into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}

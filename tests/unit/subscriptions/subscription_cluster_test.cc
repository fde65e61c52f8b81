// subscription_cluster over an in-memory cluster: three nodes, each with its own manager, webhook
// transport and signing key, sharing one scheduler, one clock and one stream host (every node applies
// the same streams). A group's "log" commits a proposal at once on every node, in order; the test moves
// leaderships and makes proposals fail.
#include "subscriptions/subscription_cluster.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>

#include "subscriptions/control_codec.h"
#include "unit/subscriptions/fakes.h"

namespace weir::subscriptions {
namespace {

using testing::fake_host;
using testing::fake_scheduler;
using testing::fake_transport;

constexpr std::string_view root = "/v1/stream/";
constexpr std::string_view origin = "http://127.0.0.1:4437";
constexpr std::uint32_t group_count = 4;

struct sim_cluster;

// cluster_port over sim_cluster.
class fake_port final : public cluster_port {
 public:
  fake_port(sim_cluster& c, std::uint64_t id) : c_(c), id_(id) {}
  std::uint64_t node_id() const override { return id_; }
  std::uint32_t group_of(std::string_view key) const override {
    std::uint32_t h = 0;
    for (char ch : key) h = h * 31 + static_cast<unsigned char>(ch);
    return h % group_count;
  }
  std::vector<group_view> groups() const override;
  bool leads(std::uint32_t group) const override;
  void propose_here(std::uint32_t group, std::vector<std::byte> payload,
                    std::function<void(bool)> done) override;
  void propose(std::uint32_t group, std::vector<std::byte> payload, std::function<void(bool)> done) override;
  void caught_up(std::uint32_t group, std::function<void(bool)> ready) override;
  void call_leader(std::uint32_t group, std::vector<std::byte> request,
                   std::function<void(result<std::vector<std::byte>>)> done) override;

 private:
  sim_cluster& c_;
  std::uint64_t id_;
};

struct sim_node {
  sim_node(sim_cluster& c, std::uint64_t id);
  std::uint64_t id;
  fake_transport transport;
  std::shared_ptr<const signing_key> key = *signing_key::generate();
  fake_port port;
  std::unique_ptr<subscription_cluster> cluster;  // outlives the manager, which feeds it
  std::unique_ptr<subscription_manager> manager;
};

struct sim_cluster {
  manual_clock clock;
  fake_scheduler sched{clock};
  fake_host host;
  std::map<std::uint32_t, std::uint64_t> leader;  // group -> node (0: none)
  std::map<std::uint32_t, std::uint64_t> term;
  std::map<std::uint32_t, int> entries;  // committed per group
  int fail_proposals = 0;                // the next n proposals fail (their outcome: not committed)
  std::vector<std::unique_ptr<sim_node>> nodes;

  explicit sim_cluster(std::uint64_t first_leader = 1) {
    for (std::uint32_t g = 0; g < group_count; ++g) {
      leader[g] = first_leader;
      term[g] = 1;
    }
    for (std::uint64_t id = 1; id <= 3; ++id) nodes.push_back(std::make_unique<sim_node>(*this, id));
    for (auto& n : nodes) n->cluster->start();
    sched.drain();  // the node keys are published
  }
  ~sim_cluster() {
    for (auto& n : nodes) n->manager->shutdown();
  }
  sim_node& node(std::uint64_t id) { return *nodes.at(id - 1); }
  std::uint32_t group_of(std::string_view id) const {
    return nodes[0]->port.group_of(std::string(root) + std::string(id));
  }
  // Every node applies the entry, in order; then the proposer learns it committed.
  void commit(std::uint32_t g, std::vector<std::byte> payload, std::function<void(bool)> done) {
    sched.post([this, g, payload = std::move(payload), done = std::move(done)] {
      ++entries[g];
      for (auto& n : nodes) n->cluster->apply(g, payload);
      done(true);
    });
  }
  void move_leader(std::uint32_t g, std::uint64_t to) {
    leader[g] = to;
    ++term[g];
    poll_all();
  }
  void poll_all() {
    for (auto& n : nodes) n->cluster->poll();
    sched.drain();
  }
  // What every node's apply of a stream command reports.
  void appended(const std::string& rel, int length) {
    auto info = host.put(std::string(root) + rel, length);
    for (auto& n : nodes) n->manager->on_stream_appended(info);
    sched.drain();
  }
  void created(const std::string& rel, int length) {
    auto info = host.put(std::string(root) + rel, length);
    for (auto& n : nodes) n->manager->on_stream_created(info);
    sched.drain();
  }
  control_response call(std::uint64_t at, http::method m, std::string_view rest, std::string_view body = {},
                        std::string_view auth = {}) {
    std::optional<control_response> out;
    node(at).cluster->handle(control_request{m, body, auth, root, rest, origin},
                             [&](control_response r) { out = std::move(r); });
    sched.drain();
    EXPECT_TRUE(out.has_value()) << "no answer for " << rest;
    return out.value_or(control_response{0});
  }
  std::size_t webhooks() const {
    std::size_t n = 0;
    for (const auto& node : nodes) n += node->transport.sent.size();
    return n;
  }
};

std::vector<cluster_port::group_view> fake_port::groups() const {
  std::vector<group_view> out;
  for (std::uint32_t g = 0; g < group_count; ++g) out.push_back(group_view{c_.leader[g] == id_, c_.term[g]});
  return out;
}

bool fake_port::leads(std::uint32_t group) const {
  return c_.leader[group] == id_;
}

void fake_port::propose_here(std::uint32_t group, std::vector<std::byte> payload,
                             std::function<void(bool)> done) {
  if (c_.leader[group] != id_ || c_.fail_proposals > 0) {
    if (c_.fail_proposals > 0) --c_.fail_proposals;
    c_.sched.post([done = std::move(done)] { done(false); });
    return;
  }
  c_.commit(group, std::move(payload), std::move(done));
}

void fake_port::propose(std::uint32_t group, std::vector<std::byte> payload, std::function<void(bool)> done) {
  if (c_.leader[group] == 0) {
    c_.sched.post([done = std::move(done)] { done(false); });
    return;
  }
  c_.commit(group, std::move(payload), std::move(done));
}

void fake_port::caught_up(std::uint32_t group, std::function<void(bool)> ready) {
  c_.sched.post([this, group, ready = std::move(ready)] { ready(c_.leader[group] != 0); });
}

void fake_port::call_leader(std::uint32_t group, std::vector<std::byte> request,
                            std::function<void(result<std::vector<std::byte>>)> done) {
  const std::uint64_t at = c_.leader[group];
  if (at == 0) {
    c_.sched.post([done = std::move(done)] { done(error{1, "no leader"}); });
    return;
  }
  c_.node(at).cluster->serve(group, request,
                             [done = std::move(done)](std::optional<std::vector<std::byte>> a) {
                               if (!a) return done(error{1, "not the leader"});
                               done(std::move(*a));
                             });
}

sim_node::sim_node(sim_cluster& c, std::uint64_t node_id) : id(node_id), port(c, node_id) {
  cluster = std::make_unique<subscription_cluster>(c.sched, port, key, subscription_cluster::options{});
  manager_options opts{true, 30'000, 10'000, 3'600'000};
  cluster->fill_manager_options(opts);
  manager = std::make_unique<subscription_manager>(c.sched, c.host, transport, c.clock, key,
                                                   token_signer(token_signer::random_secret()), opts);
  cluster->attach(*manager);
}

struct json_doc {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  explicit json_doc(const std::string& text) {
    auto err = parser.parse(text).get(root);
    EXPECT_EQ(err, simdjson::SUCCESS) << text;
  }
  simdjson::simdjson_result<simdjson::dom::element> operator[](std::string_view k) const { return root[k]; }
};

std::string str(simdjson::simdjson_result<simdjson::dom::element> e) {
  std::string_view s;
  return e.get(s) == simdjson::SUCCESS ? std::string(s) : std::string("<not a string>");
}

std::string webhook_sub(std::string_view pattern = "events/*") {
  return fmt::format(
      R"({{"type":"webhook","pattern":"{}","webhook":{{"url":"http://127.0.0.1:9/webhook"}},"lease_ttl_ms":5000}})",
      pattern);
}

// Creating through a follower: the leader of the subscription's group runs it; every node's replica
// then holds it, and any node reads it back (through the leader).
TEST(subscription_cluster, requests_go_to_the_leader_and_state_reaches_every_replica) {
  sim_cluster c;
  const std::uint32_t g = c.group_of("sub-1");
  c.move_leader(g, 2);
  auto created = c.call(3, http::method::put, "subscriptions/sub-1", webhook_sub());
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_NE(c.node(2).manager->find(root, "sub-1"), nullptr);  // the leader serves it
  EXPECT_EQ(c.node(1).manager->find(root, "sub-1"), nullptr);  // the others only replicate it
  EXPECT_EQ(c.node(3).manager->find(root, "sub-1"), nullptr);
  for (auto& n : c.nodes) {
    ASSERT_EQ(n->cluster->replica().subscriptions().count("/v1/stream/sub-1"), 1u) << "node " << n->id;
  }
  auto got = c.call(1, http::method::get, "subscriptions/sub-1");
  ASSERT_EQ(got.status, 200) << got.body;
  json_doc doc(got.body);
  EXPECT_EQ(str(doc["id"]), "sub-1");
  // Signed by the leader's key, which every node's JWKS lists.
  EXPECT_EQ(str(doc["webhook"]["signing"]["kid"]), c.node(2).key->kid());
  for (std::uint64_t at = 1; at <= 3; ++at) {
    auto jwks = c.call(at, http::method::get, "jwks.json");
    ASSERT_EQ(jwks.status, 200);
    for (auto& n : c.nodes) EXPECT_NE(jwks.body.find(n->key->kid()), std::string::npos) << at;
  }
  EXPECT_EQ(c.call(1, http::method::del, "subscriptions/sub-1").status, 204);
  for (auto& n : c.nodes) EXPECT_TRUE(n->cluster->replica().subscriptions().empty());
  EXPECT_EQ(c.call(3, http::method::get, "subscriptions/sub-1").status, 404);
}

// Every node sees the stream events; only the leader of the subscription's group delivers.
TEST(subscription_cluster, only_the_leader_delivers) {
  sim_cluster c;
  const std::uint32_t g = c.group_of("s");
  c.move_leader(g, 3);
  ASSERT_EQ(c.call(1, http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  c.created("events/a", 0);
  c.appended("events/a", 1);
  EXPECT_EQ(c.webhooks(), 1u);
  ASSERT_EQ(c.node(3).transport.sent.size(), 1u);
  // Answered {"done":true}: the cursor moves, and that change is replicated.
  c.node(3).transport.answer(200, R"({"done":true})");
  c.sched.advance(50);
  for (auto& n : c.nodes) {
    const auto& s = n->cluster->replica().subscriptions().at("/v1/stream/s");
    EXPECT_EQ(s.links.at("events/a").acked_offset, fake_host::offset(1)) << "node " << n->id;
    EXPECT_EQ(s.generation, 1u);
  }
}

// The new leader resumes: a retry that the old leader scheduled runs on the new one.
TEST(subscription_cluster, a_new_leader_resumes_the_retry_schedule) {
  sim_cluster c;
  const std::uint32_t g = c.group_of("s");
  c.move_leader(g, 1);
  ASSERT_EQ(c.call(2, http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  c.created("events/a", 0);
  c.appended("events/a", 2);
  ASSERT_EQ(c.node(1).transport.sent.size(), 1u);
  c.node(1).transport.answer(500);  // retried in about 1 s
  c.sched.advance(50);
  ASSERT_TRUE(c.node(2).cluster->replica().subscriptions().at("/v1/stream/s").failed);
  c.move_leader(g, 2);
  EXPECT_EQ(c.node(1).manager->size(), 0u);  // unloaded
  EXPECT_NE(c.node(2).manager->find(root, "s"), nullptr);
  EXPECT_EQ(c.node(2).transport.sent.size(), 0u);  // still backing off
  c.sched.advance(1'500);
  EXPECT_EQ(c.node(1).transport.sent.size(), 1u);  // the old leader does not retry
  ASSERT_EQ(c.node(2).transport.sent.size(), 1u);
  json_doc note(c.node(2).transport.sent[0].req.body);
  EXPECT_EQ(int64_t(note["generation"]), 2);
  EXPECT_EQ(str(note["streams"].at(0)["tail_offset"]), fake_host::offset(2));
}

// A wake the old leader had in flight is woken again by the new leader (the cursor did not move).
TEST(subscription_cluster, pending_work_is_woken_again_after_a_failover) {
  sim_cluster c;
  const std::uint32_t g = c.group_of("s");
  c.move_leader(g, 1);
  ASSERT_EQ(c.call(1, http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  c.created("events/a", 0);
  c.appended("events/a", 1);
  ASSERT_EQ(c.node(1).transport.sent.size(), 1u);
  c.sched.advance(50);  // the link and the new generation are committed (changes go out after 20 ms)
  c.move_leader(g, 3);
  ASSERT_EQ(c.node(3).transport.sent.size(), 1u);
  json_doc note(c.node(3).transport.sent[0].req.body);
  EXPECT_EQ(int64_t(note["generation"]), 2);
  c.node(1).transport.answer(200, R"({"done":true})");  // too late: node 1 no longer holds it
  c.sched.advance(50);
  EXPECT_EQ(c.node(3).cluster->replica().subscriptions().at("/v1/stream/s").links.at("events/a").acked_offset,
            "-1");
  c.node(3).transport.answer(200, R"({"done":true})");
  c.sched.advance(50);
  EXPECT_EQ(c.node(1).cluster->replica().subscriptions().at("/v1/stream/s").links.at("events/a").acked_offset,
            fake_host::offset(1));
}

// A stream created and written while no node held the subscription (its group between leaders) is
// linked at its start by the new leader, so that data is woken, not skipped.
TEST(subscription_cluster, a_stream_that_appeared_during_a_failover_is_linked_at_its_start) {
  sim_cluster c;
  const std::uint32_t g = c.group_of("s");
  c.move_leader(g, 1);
  ASSERT_EQ(c.call(1, http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  c.leader[g] = 0;  // the leader dies; an election runs
  c.poll_all();
  EXPECT_EQ(c.node(1).manager->size(), 0u);
  c.created("events/new", 0);  // every node applies it; none holds the subscription
  c.appended("events/new", 3);
  EXPECT_EQ(c.webhooks(), 0u);
  c.move_leader(g, 2);
  ASSERT_EQ(c.node(2).transport.sent.size(), 1u);
  json_doc note(c.node(2).transport.sent[0].req.body);
  EXPECT_EQ(str(note["streams"].at(0)["path"]), "events/new");
  EXPECT_EQ(str(note["streams"].at(0)["acked_offset"]), "-1");
  EXPECT_EQ(str(note["streams"].at(0)["tail_offset"]), fake_host::offset(3));
}

// A change that does not commit answers 503 and the leader reloads the group from its replica.
TEST(subscription_cluster, a_change_that_does_not_commit_answers_503) {
  sim_cluster c;
  const std::uint32_t g = c.group_of("s");
  c.move_leader(g, 2);
  c.fail_proposals = 1;
  auto r = c.call(1, http::method::put, "subscriptions/s", webhook_sub());
  EXPECT_EQ(r.status, 503) << r.body;
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Retry-After");
  EXPECT_FALSE(c.node(2).cluster->serving(g));
  EXPECT_EQ(c.node(2).manager->size(), 0u);
  for (auto& n : c.nodes) EXPECT_TRUE(n->cluster->replica().subscriptions().empty());
  c.poll_all();  // still the leader: loads the group again
  EXPECT_TRUE(c.node(2).cluster->serving(g));
  EXPECT_EQ(c.call(3, http::method::put, "subscriptions/s", webhook_sub()).status, 201);
}

// Without a leader the request cannot be served.
TEST(subscription_cluster, no_leader_answers_503) {
  sim_cluster c;
  const std::uint32_t g = c.group_of("s");
  c.leader[g] = 0;
  c.poll_all();
  auto r = c.call(1, http::method::get, "subscriptions/s");
  EXPECT_EQ(r.status, 503);
  // jwks.json and malformed ids are answered by any node.
  EXPECT_EQ(c.call(1, http::method::get, "jwks.json").status, 200);
  EXPECT_EQ(c.call(1, http::method::get, "subscriptions/bad%zz").status, 400);
}

// max-subscriptions counts the whole cluster (the replica), not the groups one node leads.
TEST(subscription_cluster, max_subscriptions_counts_every_group) {
  sim_cluster c;
  for (auto& n : c.nodes) {
    // Rebuild every node's manager with a limit of 2.
    n->manager->shutdown();
    n->manager.reset();
    manager_options opts{true, 30'000, 10'000, 3'600'000};
    opts.max_subscriptions = 2;
    n->cluster->fill_manager_options(opts);
    n->manager = std::make_unique<subscription_manager>(c.sched, c.host, n->transport, c.clock, n->key,
                                                        token_signer(token_signer::random_secret()), opts);
    n->cluster->attach(*n->manager);
  }
  // Spread the groups over the nodes.
  for (std::uint32_t g = 0; g < group_count; ++g) c.move_leader(g, 1 + g % 3);
  std::vector<std::string> ids;
  for (int i = 0; ids.size() < 3; ++i) {
    std::string id = "s" + std::to_string(i);
    if (ids.empty() || c.group_of(id) != c.group_of(ids.back())) ids.push_back(id);
  }
  EXPECT_EQ(c.call(1, http::method::put, "subscriptions/" + ids[0], webhook_sub()).status, 201);
  EXPECT_EQ(c.call(1, http::method::put, "subscriptions/" + ids[1], webhook_sub()).status, 201);
  EXPECT_EQ(c.call(1, http::method::put, "subscriptions/" + ids[2], webhook_sub()).status, 403);
}

}  // namespace
}  // namespace weir::subscriptions

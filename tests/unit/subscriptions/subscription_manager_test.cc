#include "subscriptions/subscription_manager.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <regex>

#include "subscriptions/crypto_util.h"
#include "unit/subscriptions/fakes.h"

namespace weir::subscriptions {
namespace {

using testing::fake_host;
using testing::fake_scheduler;
using testing::fake_transport;

constexpr std::string_view root = "/v1/stream/";
constexpr std::string_view origin = "http://127.0.0.1:4437";

// The development exception on (the webhook URLs here are http://127.0.0.1).
manager_options dev_options() {
  return manager_options{true, 30'000, 10'000, 3'600'000};
}

struct harness {
  explicit harness(manager_options opts = dev_options())
      : manager{sched,          host, transport, clock, key, token_signer(token_signer::random_secret()),
                std::move(opts)} {}
  manual_clock clock;
  fake_scheduler sched{clock};
  fake_host host;
  fake_transport transport;
  std::shared_ptr<const signing_key> key = *signing_key::generate();
  subscription_manager manager;

  control_response call(http::method m, std::string_view rest, std::string_view body = {},
                        std::string_view auth = {}) {
    std::optional<control_response> out;
    manager.handle(control_request{m, body, auth, root, rest, origin},
                   [&](control_response r) { out = std::move(r); });
    sched.drain();
    EXPECT_TRUE(out.has_value()) << "no answer for " << rest;
    return out.value_or(control_response{0});
  }
  void created(const std::string& rel, int length) {
    manager.on_stream_created(host.put(std::string(root) + rel, length));
    sched.drain();
  }
  void appended(const std::string& rel, int length) {
    manager.on_stream_appended(host.put(std::string(root) + rel, length));
    sched.drain();
  }
};

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

std::string webhook_sub(std::string_view pattern = "events/*", int lease = 1000) {
  return fmt::format(
      R"({{"type":"webhook","pattern":"{}","webhook":{{"url":"http://127.0.0.1:9/webhook"}},"lease_ttl_ms":{}}})",
      pattern, lease);
}

std::string ack_body(std::string_view wake_id, std::int64_t gen, std::string_view stream,
                     std::string_view offset, bool done) {
  return fmt::format(
      R"({{"wake_id":"{}","generation":{},"acks":[{{"stream":"{}","offset":"{}"}}],"done":{}}})", wake_id,
      gen, stream, offset, done ? "true" : "false");
}

const subscription_state& state_of(harness& h, std::string_view id) {
  const auto* s = h.manager.find(root, id);
  EXPECT_NE(s, nullptr);
  return *s;
}

TEST(subscription_manager, jwks_endpoint) {
  harness h;
  auto r = h.call(http::method::get, "jwks.json");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/jwk-set+json");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Cache-Control");
  EXPECT_EQ(r.headers[0].second, "public, max-age=300");
  EXPECT_EQ(r.body, h.key->jwks_json());
  EXPECT_EQ(h.call(http::method::post, "jwks.json").status, 405);
}

// PROTOCOL.md 6.2: 201 created, 200 identical, 409 different.
TEST(subscription_manager, create_reconfirm_conflict_get_delete) {
  harness h;
  auto created = h.call(http::method::put, "subscriptions/sub-1", webhook_sub());
  ASSERT_EQ(created.status, 201) << created.body;
  json_doc doc(created.body);
  EXPECT_EQ(str(doc["id"]), "sub-1");
  EXPECT_EQ(str(doc["subscription_id"]), "sub-1");
  EXPECT_EQ(str(doc["type"]), "webhook");
  EXPECT_EQ(str(doc["pattern"]), "events/*");
  EXPECT_EQ(str(doc["status"]), "active");
  EXPECT_EQ(str(doc["webhook"]["url"]), "http://127.0.0.1:9/webhook");
  EXPECT_EQ(str(doc["webhook"]["signing"]["alg"]), "ed25519");
  EXPECT_EQ(str(doc["webhook"]["signing"]["kid"]), h.key->kid());
  EXPECT_EQ(str(doc["webhook"]["signing"]["jwks_url"]), "http://127.0.0.1:4437/v1/stream/__ds/jwks.json");
  EXPECT_TRUE(doc["wake_stream"].is_null());
  EXPECT_EQ(doc["webhook_secret"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(int64_t(doc["lease_ttl_ms"]), 1000);
  EXPECT_TRUE(
      std::regex_match(str(doc["created_at"]), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));

  EXPECT_EQ(h.call(http::method::put, "subscriptions/sub-1", webhook_sub()).status, 200);
  auto conflict = h.call(http::method::put, "subscriptions/sub-1", webhook_sub("other/*"));
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(str(json_doc(conflict.body)["error"]["code"]), "SUBSCRIPTION_ALREADY_EXISTS");

  EXPECT_EQ(h.call(http::method::get, "subscriptions/sub-1").status, 200);
  EXPECT_EQ(h.call(http::method::del, "subscriptions/sub-1").status, 204);
  EXPECT_EQ(h.call(http::method::get, "subscriptions/sub-1").status, 404);
  EXPECT_EQ(h.call(http::method::del, "subscriptions/sub-1").status, 204);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/sub-1").status, 405);
}

TEST(subscription_manager, rejects_bad_requests) {
  harness h;
  auto bad_url =
      h.call(http::method::put, "subscriptions/s",
             R"({"type":"webhook","pattern":"events/*","webhook":{"url":"http://10.0.0.1/hook"}})");
  EXPECT_EQ(bad_url.status, 400);
  EXPECT_EQ(str(json_doc(bad_url.body)["error"]["code"]), "WEBHOOK_URL_REJECTED");
  EXPECT_FALSE(str(json_doc(bad_url.body)["error"]["message"]).empty());
  auto bad_json = h.call(http::method::put, "subscriptions/s", "{nope");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(str(json_doc(bad_json.body)["error"]["code"]), "INVALID_JSON");
  EXPECT_EQ(str(json_doc(
                h.call(http::method::put, "subscriptions/s", R"({"type":"webhook"})").body)["error"]["code"]),
            "INVALID_REQUEST");
  EXPECT_EQ(h.call(http::method::put, "subscriptions/bad%2Fid", webhook_sub()).status, 400);
  EXPECT_EQ(h.call(http::method::get, "nothing").status, 404);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/none/claim", R"({"worker":"w"})").status, 404);
}

// PROTOCOL.md 6.2: backfill links existing matching streams at their tail; new streams before their data.
TEST(subscription_manager, backfill_and_event_linking) {
  harness h;
  h.host.put("/v1/stream/events/old", 5);
  h.host.put("/v1/stream/other/x", 5);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  const auto& s = state_of(h, "s");
  ASSERT_TRUE(s.linked("events/old"));
  EXPECT_FALSE(s.linked("other/x"));
  EXPECT_EQ(s.links().at("events/old").acked_offset, fake_host::offset(5));
  EXPECT_EQ(h.transport.sent.size(), 0u);  // no history replayed

  h.created("events/new", 0);
  EXPECT_TRUE(s.linked("events/new"));
  EXPECT_EQ(h.transport.sent.size(), 0u);  // empty stream: nothing pending
  h.created("deep/events/x", 3);
  EXPECT_FALSE(s.linked("deep/events/x"));
  h.appended("events/new", 1);
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

TEST(subscription_manager, explicit_membership) {
  harness h;
  h.host.put("/v1/stream/manual/b", 4);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s",
                   R"({"type":"webhook","streams":["manual/a"],"webhook":{"url":"http://127.0.0.1:9/w"}})")
                .status,
            201);
  EXPECT_EQ(
      h.call(http::method::post, "subscriptions/s/streams", R"({"streams":["manual/b","manual/c"]})").status,
      204);
  const auto& s = state_of(h, "s");
  EXPECT_EQ(s.links().at("manual/b").acked_offset, fake_host::offset(4));  // existing: at its tail
  EXPECT_EQ(s.links().at("manual/c").acked_offset, "-1");                  // absent: from its start
  EXPECT_EQ(h.call(http::method::post, "subscriptions/s/streams", R"({"streams":["manual/b"]})").status, 204);
  EXPECT_EQ(h.call(http::method::del, "subscriptions/s/streams/manual%2Fb").status, 204);
  EXPECT_EQ(h.call(http::method::del, "subscriptions/s/streams/manual/c").status, 204);
  EXPECT_EQ(h.call(http::method::del, "subscriptions/s/streams/manual%2Fzz").status, 204);
  auto get = h.call(http::method::get, "subscriptions/s");
  json_doc doc(get.body);
  simdjson::dom::array streams = doc["streams"];
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(str(streams.at(0)["path"]), "manual/a");
  EXPECT_EQ(str(streams.at(0)["link_type"]), "explicit");
  EXPECT_EQ(h.call(http::method::post, "subscriptions/s/streams", R"({"streams":"x"})").status, 400);
}

// PROTOCOL.md 7.1: signed notification; {"done":true} auto-acks the snapshot.
TEST(subscription_manager, webhook_synchronous_done) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  h.created("events/a", 2);
  ASSERT_EQ(h.transport.sent.size(), 1u);
  const auto& req = h.transport.sent[0].req;
  EXPECT_EQ(req.url, "http://127.0.0.1:9/webhook");
  std::string sig;
  for (const auto& [n, v] : req.headers) {
    if (n == "Webhook-Signature") sig = v;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_match(sig, m, std::regex(R"(^t=(\d+),kid=([^,]+),ed25519=([A-Za-z0-9_-]+)$)")))
      << sig;
  EXPECT_EQ(std::stoll(m[1].str()), h.clock.wall_ms() / 1000);
  EXPECT_EQ(m[2].str(), h.key->kid());
  EXPECT_TRUE(signing_key::verify(*base64url_decode(h.key->public_x()), m[1].str() + "." + req.body,
                                  *base64url_decode(m[3].str())));
  json_doc note(req.body);
  EXPECT_EQ(str(note["subscription_id"]), "s");
  EXPECT_EQ(str(note["callback_url"]), "http://127.0.0.1:4437/v1/stream/__ds/subscriptions/s/callback");
  EXPECT_EQ(int64_t(note["generation"]), 1);
  simdjson::dom::array streams = note["streams"];
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(str(streams.at(0)["path"]), "events/a");
  EXPECT_EQ(str(streams.at(0)["tail_offset"]), fake_host::offset(2));
  EXPECT_EQ(bool(streams.at(0)["has_pending"]), true);

  h.appended("events/a", 3);  // after the snapshot, while the wake is in flight
  EXPECT_EQ(h.transport.sent.size(), 1u);
  h.transport.answer(200, R"({"done":true})");
  h.sched.drain();
  EXPECT_EQ(state_of(h, "s").links().at("events/a").acked_offset, fake_host::offset(2));
  ASSERT_EQ(h.transport.sent.size(), 2u);  // the later append wakes again, new generation
  EXPECT_EQ(int64_t(json_doc(h.transport.sent[1].req.body)["generation"]), 2);
}

// PROTOCOL.md 7.1, 7.3: callback acks; a replay of the finished wake is FENCED.
TEST(subscription_manager, webhook_callback_and_fencing) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  h.created("events/a", 2);
  h.transport.answer(200, "{}");
  h.sched.drain();
  json_doc note(h.transport.sent[0].req.body);
  std::string token = str(note["callback_token"]);
  std::string wake_id = str(note["wake_id"]);
  std::string auth = "Bearer " + token;
  std::string body = ack_body(wake_id, 1, "events/a", fake_host::offset(2), true);

  EXPECT_EQ(h.call(http::method::post, "subscriptions/s/callback", body).status, 401);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/s/callback", body, "Bearer nope.nope").status, 401);
  auto wrong_wake = h.call(http::method::post, "subscriptions/s/callback",
                           ack_body("w_other", 1, "events/a", fake_host::offset(2), true), auth);
  EXPECT_EQ(wrong_wake.status, 409);

  auto heartbeat = h.call(http::method::post, "subscriptions/s/callback",
                          ack_body(wake_id, 1, "events/a", fake_host::offset(1), false), auth);
  EXPECT_EQ(heartbeat.status, 200);
  EXPECT_EQ(heartbeat.body, R"({"ok":true,"next_wake":false})");
  EXPECT_EQ(state_of(h, "s").links().at("events/a").acked_offset, fake_host::offset(1));

  auto ok = h.call(http::method::post, "subscriptions/s/callback", body, auth);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, R"({"ok":true,"next_wake":false})");
  EXPECT_EQ(state_of(h, "s").links().at("events/a").acked_offset, fake_host::offset(2));
  auto stale = h.call(http::method::post, "subscriptions/s/callback", body, auth);
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(str(json_doc(stale.body)["error"]["code"]), "FENCED");
}

TEST(subscription_manager, callback_reports_next_wake) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  h.created("events/a", 2);
  h.transport.answer(200, "{}");
  json_doc note(h.transport.sent[0].req.body);
  h.appended("events/a", 4);
  auto r = h.call(http::method::post, "subscriptions/s/callback",
                  ack_body(str(note["wake_id"]), 1, "events/a", fake_host::offset(2), true),
                  "Bearer " + str(note["callback_token"]));
  EXPECT_EQ(r.body, R"({"ok":true,"next_wake":true})");
  EXPECT_EQ(h.transport.sent.size(), 2u);
}

// PROTOCOL.md 6.3: deleted subscriptions fail in-flight callbacks and move no cursor.
TEST(subscription_manager, deleted_subscription_rejects_callbacks) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  h.created("events/a", 2);
  h.transport.answer(200, "{}");
  json_doc note(h.transport.sent[0].req.body);
  std::string body = ack_body(str(note["wake_id"]), 1, "events/a", fake_host::offset(2), true);
  std::string auth = "Bearer " + str(note["callback_token"]);
  EXPECT_EQ(h.call(http::method::del, "subscriptions/s").status, 204);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/s/callback", body, auth).status, 404);
  // Re-created under the same id: the old token belongs to another incarnation.
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/s/callback", body, auth).status, 401);
  EXPECT_EQ(state_of(h, "s").links().at("events/a").acked_offset,
            fake_host::offset(2));  // backfilled at tail
}

// PROTOCOL.md 6.3, 7.1: failed deliveries show status "failed" and retry with back-off.
TEST(subscription_manager, failed_delivery_retries) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub("events/*", 60'000)).status, 201);
  h.created("events/a", 1);
  h.transport.answer(500);
  h.sched.drain();
  EXPECT_EQ(str(json_doc(h.call(http::method::get, "subscriptions/s").body)["status"]), "failed");
  EXPECT_EQ(h.transport.sent.size(), 1u);
  h.sched.advance(799);  // 1 s minus 20% jitter is the earliest retry
  EXPECT_EQ(h.transport.sent.size(), 1u);
  h.sched.advance(401);
  ASSERT_EQ(h.transport.sent.size(), 2u);
  h.transport.answer(0);  // connection refused
  h.sched.advance(1599);
  EXPECT_EQ(h.transport.sent.size(), 2u);
  h.sched.advance(802);
  ASSERT_EQ(h.transport.sent.size(), 3u);
  h.transport.answer(204, "");
  h.sched.drain();
  EXPECT_EQ(str(json_doc(h.call(http::method::get, "subscriptions/s").body)["status"]), "active");
}

// PROTOCOL.md 7.3: the webhook lease expires without a callback and the wake is re-issued.
TEST(subscription_manager, webhook_lease_expiry_rewakes) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub("events/*", 1000)).status, 201);
  h.created("events/a", 1);
  h.transport.answer(200, "{}");
  h.sched.advance(999);
  EXPECT_EQ(h.transport.sent.size(), 1u);
  h.sched.advance(1);
  ASSERT_EQ(h.transport.sent.size(), 2u);
  EXPECT_EQ(int64_t(json_doc(h.transport.sent[1].req.body)["generation"]), 2);
}

std::string pull_sub(int lease = 1000) {
  return fmt::format(
      R"({{"type":"pull-wake","pattern":"events/*","wake_stream":"wake/pool","lease_ttl_ms":{}}})", lease);
}

// PROTOCOL.md 7.2: wake event, claim, ALREADY_CLAIMED, ack, release.
TEST(subscription_manager, pull_wake_flow) {
  harness h;
  h.host.put("/v1/stream/wake/pool", 0);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/p", pull_sub()).status, 201);
  h.created("events/a", 2);
  auto& events = h.host.appended["/v1/stream/wake/pool"];
  ASSERT_EQ(events.size(), 1u);
  json_doc wake(events[0]);
  EXPECT_EQ(str(wake["type"]), "wake");
  EXPECT_EQ(str(wake["subscription_id"]), "p");
  EXPECT_EQ(str(wake["stream"]), "events/a");
  EXPECT_EQ(int64_t(wake["generation"]), 1);
  // The wake stream's own append does not link it (it matches no pattern here, and is excluded anyway).
  h.manager.on_stream_appended(h.host.streams["/v1/stream/wake/pool"]);
  EXPECT_FALSE(state_of(h, "p").linked("wake/pool"));

  auto claim = h.call(http::method::post, "subscriptions/p/claim", R"({"worker":"worker-1"})");
  ASSERT_EQ(claim.status, 200) << claim.body;
  json_doc c(claim.body);
  EXPECT_EQ(str(c["wake_id"]), str(wake["wake_id"]));
  EXPECT_EQ(int64_t(c["generation"]), 1);
  EXPECT_EQ(int64_t(c["lease_ttl_ms"]), 1000);
  simdjson::dom::array streams = c["streams"];
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(str(streams.at(0)["tail_offset"]), fake_host::offset(2));

  auto busy = h.call(http::method::post, "subscriptions/p/claim", R"({"worker":"worker-2"})");
  EXPECT_EQ(busy.status, 409);
  json_doc b(busy.body);
  EXPECT_EQ(str(b["error"]["code"]), "ALREADY_CLAIMED");
  EXPECT_EQ(str(b["error"]["current_holder"]), "worker-1");
  EXPECT_EQ(int64_t(b["error"]["generation"]), 1);

  std::string auth = "Bearer " + str(c["token"]);
  auto ack = h.call(http::method::post, "subscriptions/p/ack",
                    ack_body(str(c["wake_id"]), 1, "events/a", fake_host::offset(2), true), auth);
  EXPECT_EQ(ack.status, 200);
  EXPECT_EQ(ack.body, R"({"ok":true,"next_wake":false})");
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/ack",
                   ack_body(str(c["wake_id"]), 1, "events/a", fake_host::offset(2), true), auth)
                .status,
            409);

  h.appended("events/a", 3);
  EXPECT_EQ(events.size(), 2u);
  auto claim2 = h.call(http::method::post, "subscriptions/p/claim", R"({"worker":"worker-1"})");
  ASSERT_EQ(claim2.status, 200);
  json_doc c2(claim2.body);
  std::string release_body = fmt::format(R"({{"wake_id":"{}","generation":{}}})", str(c2["wake_id"]), 2);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/release", release_body).status, 401);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/release", release_body, auth).status,
            409);  // old token
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/release", release_body, "Bearer " + str(c2["token"]))
                .status,
            204);
  EXPECT_EQ(events.size(), 3u);  // pending work after release: another wake event
  EXPECT_EQ(state_of(h, "p").links().at("events/a").acked_offset, fake_host::offset(2));
}

TEST(subscription_manager, pull_wake_lease_expiry_frees_the_claim) {
  harness h;
  h.host.put("/v1/stream/wake/pool", 0);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/p", pull_sub(1000)).status, 201);
  h.created("events/a", 2);
  ASSERT_EQ(h.call(http::method::post, "subscriptions/p/claim", R"({"worker":"w1"})").status, 200);
  h.sched.advance(999);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/claim", R"({"worker":"w2"})").status, 409);
  h.sched.advance(1);
  EXPECT_EQ(h.host.appended["/v1/stream/wake/pool"].size(), 2u);  // re-announced after expiry
  auto c = h.call(http::method::post, "subscriptions/p/claim", R"({"worker":"w2"})");
  EXPECT_EQ(c.status, 200);
  EXPECT_EQ(int64_t(json_doc(c.body)["generation"]), 2);
}

TEST(subscription_manager, missing_wake_stream_retries) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/p", pull_sub()).status, 201);
  h.created("events/a", 2);
  EXPECT_TRUE(state_of(h, "p").failed());
  h.host.put("/v1/stream/wake/pool", 0);
  h.sched.advance(1200);
  EXPECT_EQ(h.host.appended["/v1/stream/wake/pool"].size(), 1u);
}

TEST(subscription_manager, wrong_delivery_type_endpoints) {
  harness h;
  h.host.put("/v1/stream/wake/pool", 0);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/p", pull_sub()).status, 201);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/w", webhook_sub()).status, 201);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/callback", "{}").status, 400);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/w/claim", R"({"worker":"x"})").status, 400);
  EXPECT_EQ(h.call(http::method::get, "subscriptions/p/claim").status, 405);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/bogus").status, 404);
  EXPECT_EQ(h.call(http::method::post, "subscriptions/p/streams", R"({"streams":["wake/pool"]})").status,
            400);
}

TEST(subscription_manager, shutdown_cancels_timers) {
  harness h;
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub()).status, 201);
  h.created("events/a", 1);
  EXPECT_GT(h.sched.timer_count(), 0u);
  h.manager.shutdown();
  EXPECT_EQ(h.sched.timer_count(), 0u);
  h.transport.answer(200, "{}");
  h.sched.drain();  // the completion is ignored, nothing crashes
  EXPECT_EQ(h.call(http::method::get, "jwks.json").status, 503);
}

}  // namespace
}  // namespace weir::subscriptions

namespace weir::subscriptions {
namespace {

// The fakes of a node that restarts: managers made one after another share the scheduler, clock, host
// and signing key, and every batch they persist is kept in `batches` (the log is their replay).
struct restart_rig {
  std::vector<journal_batch> batches;
  manual_clock clock;
  fake_scheduler sched{clock};
  fake_host host;
  fake_transport transport;
  std::shared_ptr<const signing_key> key = *signing_key::generate();

  subscription_manager make(fake_transport& t) {
    manager_options opts{true, 30'000, 10'000, 3'600'000};
    opts.persist = [this](journal_batch b) { batches.push_back(std::move(b)); };
    return subscription_manager(sched, host, t, clock, key, token_signer(token_signer::random_secret()),
                                opts);
  }
  // The subscriptions a restart would read back from the log these batches wrote.
  result<std::vector<persisted_subscription>> replay() const {
    std::string log;
    for (const auto& b : batches) log = b.rewrite ? b.bytes : log + b.bytes;
    auto r = replay_log(std::as_bytes(std::span(log.data(), log.size())));
    if (!r) return r.err();
    EXPECT_EQ(r->dropped_bytes, 0u);
    return std::move(r->subs);
  }
};

// Subscriptions survive a restart: cursors, generation and links come back; tails are re-learned.
TEST(subscription_manager, persists_and_restores) {
  restart_rig rig;
  auto& [batches, clock, sched, host, transport, key] = rig;
  std::string auth, wake_id;
  {
    subscription_manager m = rig.make(transport);
    std::optional<control_response> out;
    m.handle(control_request{http::method::put, webhook_sub(), {}, root, "subscriptions/s", origin},
             [&](control_response r) { out = std::move(r); });
    sched.drain();
    ASSERT_EQ(out->status, 201);
    sched.advance(25);
    ASSERT_EQ(batches.size(), 1u);  // debounced: one write for the create
    m.on_stream_created(host.put("/v1/stream/events/a", 2));
    sched.drain();
    json_doc note(transport.sent.at(0).req.body);
    transport.answer(200, "{}");
    sched.drain();
    m.handle(
        control_request{http::method::post,
                        ack_body(str(note["wake_id"]), 1, "events/a", fake_host::offset(1), true),
                        "Bearer " + str(note["callback_token"]), root, "subscriptions/s/callback", origin},
        [&](control_response r) { out = std::move(r); });
    sched.drain();
    ASSERT_EQ(out->status, 200) << out->body;
    m.shutdown();  // hands over the pending changes at once
    ASSERT_GE(batches.size(), 2u);
  }
  auto restored = rig.replay();
  ASSERT_TRUE(restored.has_value()) << restored.err().reason;
  // The callback's next_wake opened generation 2 (offset 2 was still pending) before the shutdown.
  EXPECT_EQ((*restored)[0].generation, 2u);

  fake_transport transport2;
  subscription_manager m2 = rig.make(transport2);
  m2.restore(std::move(*restored));
  sched.drain();
  const auto* s = m2.find(root, "s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->links().at("events/a").acked_offset, fake_host::offset(1));
  // events/a still has offset 2 unprocessed: the restored subscription wakes with the next generation.
  EXPECT_EQ(s->generation(), 3u);
  ASSERT_EQ(transport2.sent.size(), 1u);
  json_doc note(transport2.sent[0].req.body);
  EXPECT_EQ(int64_t(note["generation"]), 3);
  EXPECT_EQ(str(note["callback_url"]), "http://127.0.0.1:4437/v1/stream/__ds/subscriptions/s/callback");
  m2.shutdown();
}

// PROTOCOL.md 7.1: the retry schedule (next_attempt_at) survives a restart.
TEST(subscription_manager, restores_the_retry_schedule) {
  restart_rig rig;
  auto& [batches, clock, sched, host, transport, key] = rig;
  {
    subscription_manager m = rig.make(transport);
    std::optional<control_response> out;
    m.handle(
        control_request{
            http::method::put, webhook_sub("events/*", 60'000), {}, root, "subscriptions/s", origin},
        [&](control_response r) { out = std::move(r); });
    sched.drain();
    m.on_stream_created(host.put("/v1/stream/events/a", 2));
    sched.drain();
    for (int i = 0; i < 3; ++i) {  // back-offs of about 1 s and 2 s, then a third failure (about 4 s)
      transport.answer(500);
      sched.advance(i < 2 ? (1 << i) * 1200 + 1 : 0);
    }
    m.shutdown();
  }
  auto restored = rig.replay();
  ASSERT_TRUE(restored.has_value());
  ASSERT_EQ(restored->size(), 1u);
  EXPECT_TRUE((*restored)[0].failed);
  EXPECT_EQ((*restored)[0].failed_attempts, 3);
  EXPECT_GT((*restored)[0].retry_at_wall_ms, clock.wall_ms() + 3'000);

  fake_transport transport2;
  subscription_manager m2 = rig.make(transport2);
  m2.restore(std::move(*restored));
  sched.advance(3'000);
  EXPECT_EQ(transport2.sent.size(), 0u);  // still backing off
  sched.advance(2'000);
  EXPECT_EQ(transport2.sent.size(), 1u);
  m2.shutdown();
}

}  // namespace
}  // namespace weir::subscriptions

namespace weir::subscriptions {
namespace {

// PROTOCOL.md 7.3: a request after the lease deadline is fenced even if the lease timer is late.
TEST(subscription_manager, late_ack_after_lease_deadline_is_fenced) {
  harness h;
  h.host.put("/v1/stream/wake/pool", 0);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/p", pull_sub(1000)).status, 201);
  h.created("events/a", 2);
  auto c = h.call(http::method::post, "subscriptions/p/claim", R"({"worker":"w1"})");
  ASSERT_EQ(c.status, 200);
  json_doc claim(c.body);
  h.clock.advance(millis(1500));  // time passes, but no timer has run yet
  auto ack = h.call(http::method::post, "subscriptions/p/ack",
                    ack_body(str(claim["wake_id"]), 1, "events/a", fake_host::offset(2), true),
                    "Bearer " + str(claim["token"]));
  EXPECT_EQ(ack.status, 409);
  EXPECT_EQ(state_of(h, "p").links().at("events/a").acked_offset, "-1");
  EXPECT_EQ(h.host.appended["/v1/stream/wake/pool"].size(), 2u);  // pending work woken again
}

}  // namespace
}  // namespace weir::subscriptions

namespace weir::subscriptions {
namespace {

// A webhook that keeps failing is retried a bounded number of times, then the subscription stays
// `failed` and paused until an identical PUT re-confirms it.
TEST(subscription_manager, webhook_retries_are_capped) {
  manager_options o = dev_options();
  o.max_webhook_retries = 3;
  harness h(o);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub("events/*", 60'000)).status, 201);
  h.created("events/a", 1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(h.transport.sent.size(), static_cast<std::size_t>(i + 1));
    h.transport.answer(0);   // connection refused
    h.sched.advance(5'000);  // past the 1 s and 2 s back-offs (+20%)
  }
  EXPECT_EQ(h.transport.sent.size(), 3u);
  h.sched.advance(600'000);
  h.appended("events/a", 2);
  EXPECT_EQ(h.transport.sent.size(), 3u);  // paused: no timer, and new data does not wake it
  EXPECT_EQ(h.sched.timer_count(), 0u);
  EXPECT_TRUE(state_of(h, "s").paused());
  EXPECT_EQ(str(json_doc(h.call(http::method::get, "subscriptions/s").body)["status"]), "failed");
  // An identical re-confirmation resumes delivery at once.
  EXPECT_EQ(h.call(http::method::put, "subscriptions/s", webhook_sub("events/*", 60'000)).status, 200);
  ASSERT_EQ(h.transport.sent.size(), 4u);
  h.transport.answer(200, R"({"done":true})");
  h.sched.drain();
  EXPECT_FALSE(state_of(h, "s").paused());
  EXPECT_EQ(str(json_doc(h.call(http::method::get, "subscriptions/s").body)["status"]), "active");
}

// The number of subscriptions is bounded (docs/limits.md) and the answer names the limit.
TEST(subscription_manager, subscription_count_is_capped) {
  manager_options o = dev_options();
  o.max_subscriptions = 2;
  harness h(o);
  EXPECT_EQ(h.call(http::method::put, "subscriptions/a", webhook_sub()).status, 201);
  EXPECT_EQ(h.call(http::method::put, "subscriptions/b", webhook_sub()).status, 201);
  auto third = h.call(http::method::put, "subscriptions/c", webhook_sub());
  EXPECT_EQ(third.status, 403);
  EXPECT_EQ(str(json_doc(third.body)["error"]["code"]), "LIMIT_EXCEEDED");
  EXPECT_NE(third.body.find("max-subscriptions (2)"), std::string::npos) << third.body;
  EXPECT_EQ(h.call(http::method::put, "subscriptions/b", webhook_sub()).status, 200);  // re-confirm
  EXPECT_EQ(h.call(http::method::del, "subscriptions/a").status, 204);
  EXPECT_EQ(h.call(http::method::put, "subscriptions/c", webhook_sub()).status, 201);
}

TEST(subscription_manager, pattern_size_is_capped) {
  manager_options o = dev_options();
  o.max_pattern_bytes = 16;
  harness h(o);
  EXPECT_EQ(h.call(http::method::put, "subscriptions/a", webhook_sub("events/0123456/*")).status, 201);
  auto r = h.call(http::method::put, "subscriptions/b", webhook_sub("events/01234567/*"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(str(json_doc(r.body)["error"]["code"]), "LIMIT_EXCEEDED");
  EXPECT_NE(r.body.find("max-subscription-pattern-bytes (16 bytes)"), std::string::npos) << r.body;
}

// PROTOCOL.md 12.8: without allow-loopback-webhooks, loopback and plain-HTTP URLs are refused.
TEST(subscription_manager, loopback_webhooks_are_refused_by_default) {
  harness h(manager_options{});
  auto r = h.call(http::method::put, "subscriptions/a", webhook_sub());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(str(json_doc(r.body)["error"]["code"]), "WEBHOOK_URL_REJECTED");
  auto http = h.call(http::method::put, "subscriptions/b",
                     R"({"type":"webhook","pattern":"a/*","webhook":{"url":"http://worker.example/h"}})");
  EXPECT_EQ(http.status, 400);
  EXPECT_NE(http.body.find("https"), std::string::npos);
}

}  // namespace
}  // namespace weir::subscriptions

namespace weir::subscriptions {
namespace {

// Cluster mode (subscription_cluster): changes go out per subscription key through `replicate` (never
// as a journal batch or a compaction), and an answer waits for `durable`.
TEST(subscription_manager, replicate_mode_hands_records_per_key_and_answers_when_durable) {
  std::vector<std::pair<std::string, std::string>> replicated;
  std::vector<std::function<void(bool)>> waiting;
  manager_options opts = dev_options();
  opts.replicate = [&](const std::string& key, std::string record) {
    replicated.emplace_back(key, std::move(record));
  };
  opts.durable = [&](const std::string&, std::function<void(bool)> done) {
    waiting.push_back(std::move(done));
  };
  harness h(opts);
  std::optional<control_response> out;
  h.manager.handle(control_request{http::method::put, webhook_sub(), {}, root, "subscriptions/a", origin},
                   [&](control_response r) { out = std::move(r); });
  h.sched.drain();
  EXPECT_FALSE(out.has_value());  // not before the change is durable
  ASSERT_EQ(waiting.size(), 1u);
  ASSERT_EQ(replicated.size(), 1u);  // handed over at once, not after persist_delay_ms
  EXPECT_EQ(replicated[0].first, "/v1/stream/a");
  std::map<std::string, persisted_subscription> subs;
  ASSERT_TRUE(apply_records(subs, std::as_bytes(std::span(replicated[0].second))));
  EXPECT_EQ(subs.count("/v1/stream/a"), 1u);
  waiting[0](true);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, 201);

  // A change that could not be made durable answers 503.
  out.reset();
  h.manager.handle(control_request{http::method::del, {}, {}, root, "subscriptions/a", origin},
                   [&](control_response r) { out = std::move(r); });
  ASSERT_EQ(waiting.size(), 2u);
  waiting[1](false);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, 503);
  EXPECT_EQ(replicated.back().first, "/v1/stream/a");  // the "del" record went out
}

// unload forgets subscriptions without recording anything; their late completions are ignored.
TEST(subscription_manager, unload_forgets_without_recording) {
  std::vector<std::string> keys;
  manager_options opts = dev_options();
  opts.replicate = [&](const std::string& key, std::string) { keys.push_back(key); };
  opts.durable = [](const std::string&, std::function<void(bool)> done) { done(true); };
  harness h(opts);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/a", webhook_sub()).status, 201);
  ASSERT_EQ(h.call(http::method::put, "subscriptions/b", webhook_sub()).status, 201);
  h.created("events/x", 1);
  ASSERT_EQ(h.transport.sent.size(), 2u);
  keys.clear();
  h.manager.unload([](const std::string& key) { return key == "/v1/stream/a"; });
  EXPECT_EQ(h.manager.find(root, "a"), nullptr);
  EXPECT_NE(h.manager.find(root, "b"), nullptr);
  h.transport.answer(200, R"({"done":true})");  // a's delivery: nobody holds it any more
  h.transport.answer(200, R"({"done":true})");
  h.sched.advance(50);
  for (const auto& k : keys) EXPECT_EQ(k, "/v1/stream/b");
  EXPECT_FALSE(keys.empty());
}

}  // namespace
}  // namespace weir::subscriptions

// subscription_manager: every subscription of the node, the control API (PROTOCOL.md 6, 7) and the wiring
// of state changes to deliveries. Knows nothing of sockets or event loops: requests come in as
// control_request, answers go out through a responder, time comes from a clock_source, timers and hops
// home go through a `scheduler`, webhooks through a webhook_transport and stream facts through the
// stream_host. `service` adapts it to the engine; tests drive it with fakes.
//
// Threading: lives on the home loop (core 0). Every method runs there. Callbacks from the stream_host
// and the transport may come from any thread; they are re-posted through scheduler::post.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "http/request_parser.h"
#include "subscriptions/glob_matcher.h"
#include "subscriptions/service.h"
#include "subscriptions/signing_key.h"
#include "subscriptions/subscription_json.h"
#include "subscriptions/subscription_log.h"
#include "subscriptions/subscription_state.h"
#include "subscriptions/subscription_store.h"
#include "subscriptions/token_signer.h"
#include "subscriptions/url_validator.h"
#include "subscriptions/webhook_sender.h"

namespace weir::subscriptions {

// Posting home and one-shot timers (the event loop in production, a manual queue in tests).
class scheduler {
 public:
  virtual ~scheduler() = default;
  // Thread-safe: runs `fn` on the home loop soon.
  virtual void post(std::function<void()> fn) = 0;
  virtual std::uint64_t add_timer(std::int64_t delay_ms, std::function<void()> fn) = 0;
  virtual void cancel_timer(std::uint64_t id) = 0;
};

struct control_response {
  int status = 200;
  std::string body;  // JSON unless content_type says otherwise; empty for 204
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Allow, Cache-Control)
};

using responder = std::function<void(control_response)>;

struct manager_options {
  bool allow_localhost_webhooks = false;  // PROTOCOL.md 6.2 development exception (url_policy)
  std::int64_t default_lease_ttl_ms = 30'000;
  std::int64_t webhook_timeout_ms = 10'000;
  std::int64_t token_lifetime_ms = 3'600'000;
  // Receives the changes (subscription_log records) shortly after every durable change, and now and then
  // a compaction image of the whole state; empty = the subscriptions are not persisted.
  std::function<void(journal_batch)> persist;
  std::int64_t persist_delay_ms = 20;
  // The log is compacted once the records appended since the last image exceed both this and the
  // image's size, so compaction costs O(1) amortised per change.
  std::uint64_t compact_min_bytes = 1u << 20;
  // url_policy::allow_hosts (setting webhook-allow-hosts).
  std::vector<std::string> webhook_allow_hosts;
  // Failed webhook deliveries in a row after which a subscription stops retrying: it stays `failed`
  // (paused) until it is re-confirmed with an identical PUT. 0: retry forever.
  int max_webhook_retries = 30;
  // What one client can make the node keep is bounded (docs/limits.md). 0: unlimited.
  std::size_t max_subscriptions = 1'000;
  std::size_t max_pattern_bytes = 256;

  // Cluster mode (subscription_cluster; all empty on a single node). The manager then holds only the
  // subscriptions of the raft groups this node leads:
  //   - `replicate` replaces `persist`: every change record goes there with its subscription's key, to be
  //     proposed in the subscription's group; nothing is compacted (the node log is the durability);
  //   - `durable`: an answer about subscription `key` waits until the changes made so far are committed
  //     (`done(true)`); `done(false)` (they could not be) turns it into a 503;
  //   - `jwks`: the JWK Set to serve (every node's key), and `subscription_count`: the subscriptions of
  //     the whole cluster, which max-subscriptions bounds.
  std::function<void(const std::string& key, std::string record)> replicate;
  std::function<void(const std::string& key, std::function<void(bool)> done)> durable;
  std::function<std::string()> jwks;
  std::function<std::size_t()> subscription_count;
  // restore(): link the matching streams its state does not link at their start (cluster mode: they
  // appeared while no node held the subscription) instead of at their tail (a single node's restart).
  bool restore_links_at_start = false;
};

class subscription_manager {
 public:
  subscription_manager(scheduler& sched, stream_host& host, webhook_transport& transport,
                       const clock_source& clock, std::shared_ptr<const signing_key> key, token_signer tokens,
                       manager_options opts);
  ~subscription_manager();
  subscription_manager(const subscription_manager&) = delete;
  subscription_manager& operator=(const subscription_manager&) = delete;

  void handle(const control_request& req, responder respond);

  void on_stream_created(const stream_info& s);
  void on_stream_appended(const stream_info& s);
  void on_stream_deleted(std::string_view path);

  // Re-creates persisted subscriptions (at start-up, before any request; in a cluster, when this node
  // starts leading their group): re-learns the tails of their links, re-runs the pattern backfill,
  // resumes retry schedules and wakes pending work.
  void restore(std::vector<persisted_subscription> subs);
  // Cluster mode: forgets the subscriptions `which` selects (by key) without recording a change, when
  // this node stops leading their group (the replicated state keeps them). Their timers stop, changes
  // not handed over yet are dropped, and late completions of their deliveries are ignored.
  void unload(const std::function<bool(const std::string& key)>& which);
  // Hands the changes made so far over now (persist or replicate) instead of after persist_delay_ms.
  void flush_changes();

  // Writes pending changes now, cancels every timer and ignores every later completion.
  void shutdown();

  std::size_t size() const { return subs_.size(); }

  // Webhook deliveries that completed since start: answered 2xx, or failed (error or other status).
  struct delivery_counts {
    std::uint64_t ok = 0;
    std::uint64_t failed = 0;
  };
  delivery_counts deliveries() const { return deliveries_; }

  // Tests: the state of a subscription (nullptr when absent).
  const subscription_state* find(std::string_view root, std::string_view id) const;

 private:
  struct entry {
    std::string key;  // root + id
    std::string root;
    std::string origin;  // as addressed at creation: base of callback_url
    std::uint64_t incarnation = 0;
    std::string hash;
    subscription_state state;
    std::optional<glob_matcher> glob;  // compiled `pattern`
    std::uint64_t lease_timer = 0;
    std::uint64_t retry_timer = 0;
    bool delivery_in_flight = false;
  };

  // handlers (route + method already checked)
  void put_subscription(const control_request& req, const std::string& id, responder respond);
  void add_streams(entry& e, std::string_view body, responder respond);
  void callback_or_ack(entry& e, const control_request& req, token_kind kind, responder respond);
  void claim(entry& e, std::string_view body, responder respond);
  void release(entry& e, const control_request& req, responder respond);
  // Fills `claims` from the request's Bearer token when it is a valid `kind` token of this incarnation of
  // `e`; otherwise returns the 401 answer (PROTOCOL.md 7.1-7.3).
  std::optional<control_response> check_token(const entry& e, const control_request& req, token_kind kind,
                                              token_claims& claims);
  // True when a request for (generation, wake_id) carrying `claims` no longer addresses the current wake
  // (PROTOCOL.md 7.3); expires a lease that is past its deadline first.
  bool fenced(entry& e, const token_claims& claims, std::uint64_t generation, const std::string& wake_id);

  // A stream under some subscription's root was created or appended to: `update` moves the tail of a
  // linked stream; an unlinked one matching the pattern is linked at its start (PROTOCOL.md 6.2).
  using linked_update = void (subscription_state::*)(const std::string& path, const std::string& tail);
  void on_stream_event(const stream_info& s, linked_update update);

  // Starts a wake when the subscription is idle with pending work, and delivers it.
  void pump(entry& e);
  // A lease past its deadline whose timer has not fired yet is expired now (PROTOCOL.md 7.3), so a late
  // request is fenced exactly as after the timer. True when it expired the wake.
  bool expire_if_due(entry& e);
  void deliver_webhook(entry& e, const wake_state& w);
  void announce_wake(entry& e, const wake_state& w);
  void on_webhook_result(const std::string& key, std::uint64_t incarnation, std::uint64_t generation,
                         webhook_result r);
  void schedule_retry(entry& e, std::int64_t delay_ms);
  void arm_lease(entry& e);
  void cancel_timers(entry& e);

  entry* lookup(const std::string& key, std::uint64_t incarnation);
  // Something durable changed: schedule a journal write.
  void changed();
  // Records changes at all (a journal on a single node, the raft group in a cluster).
  bool recording() const { return opts_.persist || opts_.replicate; }
  // Hands the changes since the last write to opts_.persist (and a compaction when due).
  void write_changes();
  void compact();
  persisted_subscription persisted(const entry& e) const;
  // `journal`: log the new subscription (not when restoring it from the log).
  entry& add_entry(const std::string& root, const std::string& origin, const std::string& id,
                   std::string hash, subscription_state state, bool journal = true);
  // Links existing streams matching the pattern at their tails (`at_start`: the ones not linked yet at
  // their start), then calls `done` on the home loop.
  void backfill(entry& e, std::function<void()> done, bool at_start = false);
  std::string new_wake_id();
  signing_info signing_for(std::string_view origin, std::string_view root) const;
  url_policy webhook_policy() const {
    return url_policy{opts_.allow_localhost_webhooks, opts_.webhook_allow_hosts};
  }
  // Runs `fn` on the home loop if this manager still exists then.
  std::function<void()> guarded(std::function<void()> fn) const;

  scheduler& sched_;
  stream_host& host_;
  webhook_transport& transport_;
  const clock_source& clock_;
  std::shared_ptr<const signing_key> key_;
  token_signer tokens_;
  manager_options opts_;
  std::unordered_map<std::string, std::unique_ptr<entry>> subs_;
  std::uint64_t next_incarnation_ = 1;
  std::uint64_t persist_timer_ = 0;
  // "sub" and "del" records not handed over yet, in order, with their subscription's key.
  std::vector<std::pair<std::string, std::string>> pending_records_;
  std::uint64_t journal_bytes_ = 0;  // appended since the last compaction image
  std::uint64_t image_bytes_ = 0;    // size of the last image
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  delivery_counts deliveries_;
};

}  // namespace weir::subscriptions

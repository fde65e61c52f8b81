// subscription_manager, second half: the delivery endpoints (callback, claim, ack, release) and the wake
// machinery (webhook delivery, wake events, retries, leases). Split from subscription_manager.cc only to
// keep each file readable; same class, same home loop.
#include <random>

#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/log.h"
#include "subscriptions/control_responses.h"
#include "subscriptions/delivery_request.h"
#include "subscriptions/subscription_json.h"
#include "subscriptions/subscription_manager.h"
#include "subscriptions/url_validator.h"

namespace weir::subscriptions {

// control_responses.h: the helpers shared by this class's translation units.
using namespace detail;

// ---------------------------------------------------------------------------------------------------
// Callback, claim, ack, release (PROTOCOL.md 7.1-7.3)

void subscription_manager::callback_or_ack(entry& e, const control_request& req, token_kind kind,
                                           responder respond) {
  token_claims claims;
  if (auto rejected = check_token(e, req, kind, claims)) return respond(std::move(*rejected));
  auto body = parse_ack_request(req.body);
  if (!body) return respond(from_config_error(body.err()));
  if (fenced(e, claims, body->generation, body->wake_id)) {
    return respond(fail(409, "FENCED", "stale wake_id or generation"));
  }
  if (!e.state.apply_acks(body->acks)) {
    return respond(
        fail(400, "INVALID_REQUEST", "ack names a stream that is not linked to this subscription"));
  }
  bool next_wake = e.state.finish_or_extend(body->done, clock_.mono_ms());
  changed();
  if (!body->done) arm_lease(e);
  json_writer w;
  w.begin_object().key("ok").value(true).key("next_wake").value(next_wake).end_object();
  respond(json(200, w.take()));
  if (body->done) {
    if (e.lease_timer) sched_.cancel_timer(e.lease_timer);
    e.lease_timer = 0;
    pump(e);
  }
}

void subscription_manager::claim(entry& e, std::string_view body, responder respond) {
  auto worker = parse_claim_request(body);
  if (!worker) return respond(from_config_error(worker.err()));
  bool busy = false;
  const wake_state* w = e.state.claim(*worker, clock_.mono_ms(), new_wake_id(), busy);
  if (!w) {
    const auto& cur = *e.state.current_wake();
    json_writer j;
    j.begin_object().key("error").begin_object();
    j.key("code").value("ALREADY_CLAIMED").key("message").value("another worker holds the lease");
    j.key("current_holder")
        .value(*cur.holder)
        .key("generation")
        .value(static_cast<std::int64_t>(cur.generation));
    j.end_object().end_object();
    return respond(json(409, j.take()));
  }
  // A worker is here: a retry announcement of the wake is no longer needed.
  if (e.retry_timer) sched_.cancel_timer(e.retry_timer);
  e.retry_timer = 0;
  changed();  // a new generation may have opened
  std::string token = tokens_.issue(token_claims{token_kind::claim, e.key, e.incarnation, w->generation,
                                                 w->wake_id, clock_.wall_ms() + opts_.token_lifetime_ms});
  arm_lease(e);
  respond(json(200, render_claim(*w, token, e.state.config().lease_ttl_ms)));
}

void subscription_manager::release(entry& e, const control_request& req, responder respond) {
  token_claims claims;
  if (auto rejected = check_token(e, req, token_kind::claim, claims)) return respond(std::move(*rejected));
  auto body = parse_release_request(req.body);
  if (!body) return respond(from_config_error(body.err()));
  if (fenced(e, claims, body->generation, body->wake_id)) {
    return respond(fail(409, "FENCED", "stale wake_id or generation"));
  }
  e.state.release();
  changed();
  if (e.lease_timer) sched_.cancel_timer(e.lease_timer);
  e.lease_timer = 0;
  respond(no_content());
  pump(e);  // PROTOCOL.md 7.2: pending work after release gets another wake event
}

std::optional<control_response> subscription_manager::check_token(const entry& e, const control_request& req,
                                                                  token_kind kind, token_claims& claims) {
  auto token = bearer(req.authorization);
  if (!token) return fail(401, "TOKEN_INVALID", "a Bearer token is required");
  auto verified = tokens_.verify(*token, clock_.wall_ms());
  if (!verified) {
    bool expired = verified.err().as<token_errc>() == token_errc::expired;
    return fail(401, expired ? "TOKEN_EXPIRED" : "TOKEN_INVALID", verified.err().reason);
  }
  if (verified->kind != kind || verified->subscription != e.key || verified->incarnation != e.incarnation) {
    return fail(401, "TOKEN_INVALID", "token is not valid for this subscription");
  }
  claims = std::move(*verified);
  return std::nullopt;
}

bool subscription_manager::fenced(entry& e, const token_claims& claims, std::uint64_t generation,
                                  const std::string& wake_id) {
  // PROTOCOL.md 7.3: token generation, request generation and wake id must all match the current wake.
  return claims.generation != generation || claims.wake_id != wake_id || expire_if_due(e) ||
         e.state.check_fence(generation, wake_id) != fence_result::ok;
}

// ---------------------------------------------------------------------------------------------------
// Wakes and delivery

bool subscription_manager::expire_if_due(entry& e) {
  const auto& w = e.state.current_wake();
  if (!w || !e.state.expire_lease(w->generation, clock_.mono_ms())) return false;
  if (e.lease_timer) sched_.cancel_timer(e.lease_timer);
  e.lease_timer = 0;
  pump(e);
  return true;
}

void subscription_manager::pump(entry& e) {
  if (e.delivery_in_flight || !*alive_) return;
  const wake_state* w = e.state.try_start_wake(clock_.mono_ms(), new_wake_id());
  if (!w) return;
  changed();  // the generation moved
  if (e.state.config().type == delivery_type::webhook) {
    arm_lease(e);
    deliver_webhook(e, *w);
  } else {
    announce_wake(e, *w);
  }
}

void subscription_manager::deliver_webhook(entry& e, const wake_state& w) {
  std::string callback_url =
      fmt::format("{}{}__ds/subscriptions/{}/callback", e.origin, e.root, e.state.id());
  std::string token = tokens_.issue(token_claims{token_kind::callback, e.key, e.incarnation, w.generation,
                                                 w.wake_id, clock_.wall_ms() + opts_.token_lifetime_ms});
  webhook_request req;
  req.url = *e.state.config().webhook_url;
  req.body = render_notification(e.state, w, callback_url, token);
  req.timeout_ms = opts_.webhook_timeout_ms;
  // Checked again under today's policy at send time (a restored subscription may predate it), resolved
  // once and connected only to checked addresses (webhook_target.h).
  req.policy = webhook_policy();
  req.headers.emplace_back("Content-Type", "application/json");
  // PROTOCOL.md 7.1: Ed25519 over "<t>.<raw body>".
  req.headers.emplace_back("Webhook-Signature", key_->webhook_signature(clock_.wall_ms() / 1000, req.body));
  e.delivery_in_flight = true;
  std::string key = e.key;
  std::uint64_t inc = e.incarnation;
  std::uint64_t gen = w.generation;
  transport_.send(std::move(req), [this, key, inc, gen](webhook_result r) {
    sched_.post(guarded([this, key, inc, gen, r = std::move(r)]() mutable {
      on_webhook_result(key, inc, gen, std::move(r));
    }));
  });
}

void subscription_manager::on_webhook_result(const std::string& key, std::uint64_t incarnation,
                                             std::uint64_t generation, webhook_result r) {
  ++(r.http_status >= 200 && r.http_status < 300 ? deliveries_.ok : deliveries_.failed);
  entry* e = lookup(key, incarnation);
  if (!e) return;  // deleted meanwhile
  e->delivery_in_flight = false;
  if (r.http_status >= 200 && r.http_status < 300) {
    if (e->state.on_delivered(generation, says_done(r.body)) && !e->state.current_wake()) {
      if (e->lease_timer) sched_.cancel_timer(e->lease_timer);
      e->lease_timer = 0;
    }
  } else {
    log::warn("subscription {}: webhook delivery of generation {} failed: {}", e->state.id(), generation,
              r.http_status ? fmt::format("HTTP {}", r.http_status) : r.error);
    static thread_local std::mt19937 rng{std::random_device{}()};
    double jitter = std::uniform_real_distribution<double>(-0.2, 0.2)(rng);
    if (auto delay =
            e->state.on_delivery_failed(generation, clock_.mono_ms(), jitter, opts_.max_webhook_retries)) {
      schedule_retry(*e, *delay);
    } else if (e->state.paused()) {
      log::warn(
          "subscription {}: {} webhook deliveries failed in a row (max-webhook-retries): paused until "
          "it is re-confirmed with PUT",
          e->state.id(), e->state.failed_attempts());
    }
  }
  changed();
  pump(*e);
}

void subscription_manager::announce_wake(entry& e, const wake_state& w) {
  std::string body = render_wake_event(e.state, w, clock_.wall_ms());
  std::string key = e.key;
  std::uint64_t inc = e.incarnation;
  std::uint64_t gen = w.generation;
  host_.append_json(e.root + *e.state.config().wake_stream, std::move(body),
                    [this, key, inc, gen](result<std::string> r) {
                      if (r) return;
                      std::string reason = r.err().reason;
                      sched_.post(guarded([this, key, inc, gen, reason] {
                        entry* e2 = lookup(key, inc);
                        if (!e2) return;
                        log::warn("subscription {}: cannot append wake event to '{}': {}", e2->state.id(),
                                  *e2->state.config().wake_stream, reason);
                        // Only an unclaimed wake is withdrawn; a worker that already claimed it keeps it.
                        const auto& cur = e2->state.current_wake();
                        if (!cur || cur->generation != gen || cur->holder) return;
                        static thread_local std::mt19937 rng{std::random_device{}()};
                        double jitter = std::uniform_real_distribution<double>(-0.2, 0.2)(rng);
                        if (auto delay = e2->state.on_delivery_failed(gen, clock_.mono_ms(), jitter)) {
                          schedule_retry(*e2, *delay);
                          changed();
                        }
                      }));
                    });
}

void subscription_manager::schedule_retry(entry& e, std::int64_t delay_ms) {
  if (e.retry_timer) sched_.cancel_timer(e.retry_timer);
  std::string key = e.key;
  std::uint64_t inc = e.incarnation;
  e.retry_timer = sched_.add_timer(delay_ms, guarded([this, key, inc] {
                                     entry* e2 = lookup(key, inc);
                                     if (!e2) return;
                                     e2->retry_timer = 0;
                                     e2->state.on_retry_due();
                                     pump(*e2);
                                   }));
}

void subscription_manager::arm_lease(entry& e) {
  const auto& w = e.state.current_wake();
  if (!w || w->lease_deadline_ms == 0) return;
  if (e.lease_timer) sched_.cancel_timer(e.lease_timer);
  std::string key = e.key;
  std::uint64_t inc = e.incarnation;
  std::uint64_t gen = w->generation;
  std::int64_t delay = std::max<std::int64_t>(0, w->lease_deadline_ms - clock_.mono_ms());
  e.lease_timer =
      sched_.add_timer(delay, guarded([this, key, inc, gen] {
                         entry* e2 = lookup(key, inc);
                         if (!e2) return;
                         e2->lease_timer = 0;
                         // PROTOCOL.md 7.3: an expired lease clears holder and wake; pending work gets
                         // another wake.
                         if (e2->state.expire_lease(gen, clock_.mono_ms())) {
                           pump(*e2);
                         } else if (e2->state.current_wake() && e2->state.current_wake()->generation == gen) {
                           arm_lease(*e2);  // extended meanwhile
                         }
                       }));
}

void subscription_manager::cancel_timers(entry& e) {
  if (e.lease_timer) sched_.cancel_timer(e.lease_timer);
  if (e.retry_timer) sched_.cancel_timer(e.retry_timer);
  e.lease_timer = e.retry_timer = 0;
}

}  // namespace weir::subscriptions

#include "subscriptions/subscription_manager.h"

#include <simdjson.h>

#include <random>

#include <fmt/format.h>

#include "base/log.h"
#include "subscriptions/crypto_util.h"
#include "subscriptions/delivery_request.h"
#include "subscriptions/glob_matcher.h"
#include "subscriptions/json_writer.h"
#include "subscriptions/subscription_json.h"
#include "subscriptions/url_validator.h"

namespace weir::subscriptions {
namespace {

control_response json(int status, std::string body) {
  control_response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

control_response fail(int status, std::string_view code, std::string_view message) {
  return json(status, render_error(code, message));
}

control_response no_content() {
  control_response r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

control_response method_not_allowed(std::string allow) {
  auto r = fail(405, "METHOD_NOT_ALLOWED", "method not allowed on this resource");
  r.headers.emplace_back("Allow", std::move(allow));
  return r;
}

// Maps a body/config parse error to its answer (the one place these errors become HTTP).
control_response from_config_error(const error& e) {
  switch (e.as<config_errc>()) {
    case config_errc::invalid_json:
      return fail(400, "INVALID_JSON", e.reason);
    case config_errc::webhook_url_rejected:
      return fail(400, "WEBHOOK_URL_REJECTED", e.reason);
    case config_errc::invalid_request:
      break;
  }
  return fail(400, "INVALID_REQUEST", e.reason);
}

std::vector<std::string_view> split_path(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '/') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// RFC 3986 2.1 percent-decoding; nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = hex(s[i + 1]);
    int lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::optional<std::string_view> bearer(std::string_view authorization) {
  constexpr std::string_view prefix = "Bearer ";
  if (authorization.size() <= prefix.size()) return std::nullopt;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return std::nullopt;
    }
  }
  auto t = authorization.substr(prefix.size());
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  if (t.empty()) return std::nullopt;
  return t;
}

// A webhook answer of {"done": true} finishes the wake synchronously (PROTOCOL.md 7.1).
bool says_done(std::string_view body) {
  if (body.empty()) return false;
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) return false;
  bool done = false;
  return root["done"].get(done) == simdjson::SUCCESS && done;
}

}  // namespace

subscription_manager::subscription_manager(scheduler& sched, stream_host& host, webhook_transport& transport,
                                           const clock_source& clock, std::shared_ptr<const signing_key> key,
                                           token_signer tokens, manager_options opts)
    : sched_(sched),
      host_(host),
      transport_(transport),
      clock_(clock),
      key_(std::move(key)),
      tokens_(std::move(tokens)),
      opts_(opts) {}

subscription_manager::~subscription_manager() {
  shutdown();
  *alive_ = false;
}

void subscription_manager::shutdown() {
  if (!*alive_) return;
  if (persist_timer_ != 0) {
    sched_.cancel_timer(persist_timer_);
    persist_timer_ = 0;
    write_snapshot();
  }
  for (auto& [_, e] : subs_) cancel_timers(*e);
  *alive_ = false;
}

std::function<void()> subscription_manager::guarded(std::function<void()> fn) const {
  return [alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)] {
    auto a = alive.lock();
    if (a && *a) fn();
  };
}

const subscription_state* subscription_manager::find(std::string_view root, std::string_view id) const {
  auto it = subs_.find(std::string(root) + std::string(id));
  return it == subs_.end() ? nullptr : &it->second->state;
}

subscription_manager::entry* subscription_manager::lookup(const std::string& key, std::uint64_t incarnation) {
  auto it = subs_.find(key);
  if (it == subs_.end() || it->second->incarnation != incarnation) return nullptr;
  return it->second.get();
}

std::string subscription_manager::new_wake_id() {
  return "w_" + to_hex(random_bytes(12));
}

signing_info subscription_manager::signing_for(std::string_view origin, std::string_view root) const {
  return signing_info{key_->kid(), fmt::format("{}{}__ds/jwks.json", origin, root)};
}

// ---------------------------------------------------------------------------------------------------
// Routing (PROTOCOL.md 6, 6.5, 7)

void subscription_manager::handle(const control_request& req, responder respond) {
  if (!*alive_) return respond(fail(503, "SHUTTING_DOWN", "server is shutting down"));
  auto parts = split_path(req.rest);
  if (parts.size() == 1 && parts[0] == "jwks.json") {
    if (req.method != http::method::get && req.method != http::method::head) {
      return respond(method_not_allowed("GET, HEAD"));
    }
    control_response r = json(200, key_->jwks_json());
    r.content_type = "application/jwk-set+json";
    r.headers.emplace_back("Cache-Control", "public, max-age=300");
    return respond(std::move(r));
  }
  if (parts.size() < 2 || parts[0] != "subscriptions") {
    return respond(fail(404, "NOT_FOUND", "no such control resource"));
  }
  auto id = percent_decode(parts[1]);
  if (!id || !valid_subscription_id(*id))
    return respond(fail(400, "INVALID_REQUEST", "invalid subscription id"));
  std::string key = std::string(req.root) + *id;

  if (parts.size() == 2) {
    switch (req.method) {
      case http::method::put:
        return put_subscription(req, *id, std::move(respond));
      case http::method::get:
      case http::method::head: {
        auto it = subs_.find(key);
        if (it == subs_.end()) return respond(fail(404, "SUBSCRIPTION_NOT_FOUND", "no such subscription"));
        return respond(json(200, render_subscription(it->second->state, signing_for(req.origin, req.root))));
      }
      case http::method::del: {
        // PROTOCOL.md 6.3: deletion tombstones the subscription; in-flight callbacks then fail (their
        // incarnation is gone) and move no cursor.
        auto it = subs_.find(key);
        if (it != subs_.end()) {
          cancel_timers(*it->second);
          subs_.erase(it);
          changed();
        }
        return respond(no_content());
      }
      default:
        return respond(method_not_allowed("GET, HEAD, PUT, DELETE"));
    }
  }

  auto it = subs_.find(key);
  if (it == subs_.end()) return respond(fail(404, "SUBSCRIPTION_NOT_FOUND", "no such subscription"));
  entry& e = *it->second;
  std::string_view action = parts[2];

  if (action == "streams") {
    if (parts.size() == 3) {
      if (req.method != http::method::post) return respond(method_not_allowed("POST"));
      return add_streams(e, req.body, std::move(respond));
    }
    if (req.method != http::method::del) return respond(method_not_allowed("DELETE"));
    // PROTOCOL.md 6.4: `:path` is URL-encoded and may contain slashes (encoded or not).
    std::string_view raw = req.rest.substr(static_cast<std::size_t>(parts[3].data() - req.rest.data()));
    auto decoded = percent_decode(raw);
    auto path = decoded ? normalize_stream_path(*decoded) : std::nullopt;
    if (!path) return respond(fail(400, "INVALID_REQUEST", "invalid stream path"));
    e.state.unlink_explicit(*path);
    changed();
    return respond(no_content());
  }
  if (parts.size() != 3) return respond(fail(404, "NOT_FOUND", "no such control resource"));
  if (action != "callback" && action != "claim" && action != "ack" && action != "release") {
    return respond(fail(404, "NOT_FOUND", "no such control resource"));
  }
  if (req.method != http::method::post) return respond(method_not_allowed("POST"));
  if (action == "callback") {
    if (e.state.config().type != delivery_type::webhook) {
      return respond(fail(400, "INVALID_REQUEST", "callback is for webhook subscriptions"));
    }
    return callback_or_ack(e, req, token_kind::callback, std::move(respond));
  }
  if (e.state.config().type != delivery_type::pull_wake) {
    return respond(fail(400, "INVALID_REQUEST", fmt::format("{} is for pull-wake subscriptions", action)));
  }
  if (action == "claim") return claim(e, req.body, std::move(respond));
  if (action == "ack") return callback_or_ack(e, req, token_kind::claim, std::move(respond));
  return release(e, req, std::move(respond));
}

// ---------------------------------------------------------------------------------------------------
// Create / re-confirm (PROTOCOL.md 6.2) and membership (6.4)

void subscription_manager::put_subscription(const control_request& req, const std::string& id,
                                            responder respond) {
  auto cfg = parse_subscription_config(
      req.body, config_limits{opts_.allow_localhost_webhooks, opts_.default_lease_ttl_ms});
  if (!cfg) return respond(from_config_error(cfg.err()));
  std::string key = std::string(req.root) + id;
  std::string hash = cfg->hash();
  if (auto it = subs_.find(key); it != subs_.end()) {
    if (it->second->hash != hash) {
      return respond(
          fail(409, "SUBSCRIPTION_ALREADY_EXISTS", "subscription exists with a different configuration"));
    }
    return respond(json(200, render_subscription(it->second->state, signing_for(req.origin, req.root))));
  }

  entry& e = add_entry(std::string(req.root), std::string(req.origin), id, std::move(hash),
                       subscription_state(id, std::move(*cfg), clock_.wall_ms()));
  changed();

  // Answer 201 once backfill and explicit links are in place, so a GET right after sees them.
  struct countdown {
    int left = 1;  // released below, after every lookup was started
    std::function<void()> finish;
    void done() {
      if (--left == 0) finish();
    }
  };
  auto cd = std::make_shared<countdown>();
  std::uint64_t inc = e.incarnation;
  std::string origin(req.origin);
  cd->finish = [this, key, inc, origin, respond = std::move(respond)] {
    entry* e2 = lookup(key, inc);
    if (!e2) {
      return respond(fail(404, "SUBSCRIPTION_NOT_FOUND", "subscription was deleted while being created"));
    }
    changed();
    respond(json(201, render_subscription(e2->state, signing_for(origin, e2->root))));
    pump(*e2);
  };

  for (const auto& path : e.state.config().streams) {
    ++cd->left;
    host_.get_stream(e.root + path, [this, key, inc, path, cd](std::optional<stream_info> s) {
      sched_.post(guarded([this, key, inc, path, cd, s = std::move(s)] {
        if (entry* e2 = lookup(key, inc)) {
          // PROTOCOL.md 6.4: existing streams are linked at their current tail.
          if (s) {
            e2->state.link_at_tail(path, true, s->tail_offset);
          } else {
            e2->state.link_at_start(path, true, std::nullopt);
          }
        }
        cd->done();
      }));
    });
  }
  ++cd->left;
  backfill(e, [cd] { cd->done(); });
  cd->done();
}

subscription_manager::entry& subscription_manager::add_entry(const std::string& root,
                                                             const std::string& origin, const std::string& id,
                                                             std::string hash, subscription_state state) {
  auto owned = std::make_unique<entry>(
      entry{root + id, root, origin, next_incarnation_++, std::move(hash), std::move(state)});
  entry& e = *owned;
  subs_[e.key] = std::move(owned);
  if (const auto& pattern = e.state.config().pattern) {
    e.glob = glob_matcher::compile(*pattern);
    WEIR_ASSERT(e.glob.has_value(), "validated pattern '{}' failed to compile", *pattern);
  }
  return e;
}

void subscription_manager::backfill(entry& e, std::function<void()> done) {
  if (!e.glob) return done();
  std::string key = e.key;
  std::uint64_t inc = e.incarnation;
  std::string root = e.root;
  host_.list_streams(root + e.glob->literal_prefix(),
                     [this, key, inc, root, done](std::vector<stream_info> all) {
                       sched_.post(guarded([this, key, inc, root, done, all = std::move(all)] {
                         if (entry* e2 = lookup(key, inc)) {
                           // PROTOCOL.md 6.2: eager backfill links matching existing streams at their current
                           // tail.
                           for (const auto& s : all) {
                             if (s.path.compare(0, root.size(), root) != 0) continue;
                             std::string rel = s.path.substr(root.size());
                             if (!e2->glob->matches(rel) || rel == e2->state.config().wake_stream) continue;
                             e2->state.link_at_tail(rel, false, s.tail_offset);
                           }
                         }
                         done();
                       }));
                     });
}

void subscription_manager::restore(std::vector<persisted_subscription> subs) {
  for (auto& p : subs) {
    std::string hash = p.config.hash();
    subscription_state st(p.id, std::move(p.config), p.created_at_wall_ms);
    std::int64_t retry_at = 0;
    if (p.retry_at_wall_ms != 0) {
      retry_at = clock_.mono_ms() + std::max<std::int64_t>(0, p.retry_at_wall_ms - clock_.wall_ms());
    }
    st.restore(std::move(p.links), p.generation, p.failed, p.failed_attempts, retry_at);
    entry& e = add_entry(p.root, p.origin, p.id, std::move(hash), std::move(st));
    if (retry_at != 0) schedule_retry(e, retry_at - clock_.mono_ms());
    // Re-learn every linked stream's tail, and link streams that matched while no snapshot was written.
    auto left = std::make_shared<std::size_t>(e.state.links().size() + 2);
    std::string key = e.key;
    std::uint64_t inc = e.incarnation;
    auto one_done = [this, key, inc, left] {
      if (--*left != 0) return;
      if (entry* e2 = lookup(key, inc)) pump(*e2);
    };
    for (const auto& [path, _] : e.state.links()) {
      host_.get_stream(e.root + path, [this, key, inc, path = path, one_done](std::optional<stream_info> s) {
        sched_.post(guarded([this, key, inc, path, one_done, s = std::move(s)] {
          entry* e2 = lookup(key, inc);
          if (e2 && s) e2->state.on_tail(path, s->tail_offset);
          one_done();
        }));
      });
    }
    backfill(e, one_done);
    one_done();
  }
}

void subscription_manager::changed() {
  if (!opts_.persist || persist_timer_ != 0 || !*alive_) return;
  persist_timer_ = sched_.add_timer(opts_.persist_delay_ms, guarded([this] {
                                      persist_timer_ = 0;
                                      write_snapshot();
                                    }));
}

void subscription_manager::write_snapshot() {
  std::vector<persisted_subscription> out;
  out.reserve(subs_.size());
  std::int64_t now_mono = clock_.mono_ms();
  std::int64_t now_wall = clock_.wall_ms();
  for (const auto& [_, e] : subs_) {
    const auto& st = e->state;
    std::int64_t retry_wall =
        st.retry_at_ms() == 0 ? 0 : now_wall + std::max<std::int64_t>(0, st.retry_at_ms() - now_mono);
    out.push_back(persisted_subscription{e->root, e->origin, st.id(), st.config(), st.created_at_wall_ms(),
                                         st.links(), st.generation(), st.failed(), st.failed_attempts(),
                                         retry_wall});
  }
  opts_.persist(encode_snapshot(out));
}

void subscription_manager::add_streams(entry& e, std::string_view body, responder respond) {
  auto paths = parse_membership_request(body);
  if (!paths) return respond(from_config_error(paths.err()));
  for (const auto& p : *paths) {
    if (p == e.state.config().wake_stream) {
      return respond(fail(400, "INVALID_REQUEST", "the wake stream cannot also be a subscribed stream"));
    }
  }
  auto left = std::make_shared<std::size_t>(paths->size() + 1);
  auto finish = std::make_shared<responder>(std::move(respond));
  std::string key = e.key;
  std::uint64_t inc = e.incarnation;
  auto one_done = [this, key, inc, left, finish] {
    if (--*left != 0) return;
    changed();
    if (entry* e2 = lookup(key, inc)) pump(*e2);
    (*finish)(no_content());
  };
  for (auto& path : *paths) {
    if (e.state.linked(path)) {
      e.state.link_at_start(path, true, std::nullopt);  // only sets the explicit flag: idempotent
      --*left;
      continue;
    }
    host_.get_stream(e.root + path, [this, key, inc, path, one_done](std::optional<stream_info> s) {
      sched_.post(guarded([this, key, inc, path, one_done, s = std::move(s)] {
        if (entry* e2 = lookup(key, inc)) {
          if (s) {
            e2->state.link_at_tail(path, true, s->tail_offset);
          } else {
            e2->state.link_at_start(path, true, std::nullopt);
          }
        }
        one_done();
      }));
    });
  }
  one_done();
}

// ---------------------------------------------------------------------------------------------------
// Callback, claim, ack, release (PROTOCOL.md 7.1-7.3)

void subscription_manager::callback_or_ack(entry& e, const control_request& req, token_kind kind,
                                           responder respond) {
  auto token = bearer(req.authorization);
  if (!token) return respond(fail(401, "TOKEN_INVALID", "a Bearer token is required"));
  auto claims = tokens_.verify(*token, clock_.wall_ms());
  if (!claims) {
    bool expired = claims.err().as<token_errc>() == token_errc::expired;
    return respond(fail(401, expired ? "TOKEN_EXPIRED" : "TOKEN_INVALID", claims.err().reason));
  }
  if (claims->kind != kind || claims->subscription != e.key || claims->incarnation != e.incarnation) {
    return respond(fail(401, "TOKEN_INVALID", "token is not valid for this subscription"));
  }
  auto body = parse_ack_request(req.body);
  if (!body) return respond(from_config_error(body.err()));
  // PROTOCOL.md 7.3: token generation, request generation and wake id must all match the current wake.
  if (claims->generation != body->generation || claims->wake_id != body->wake_id || expire_if_due(e) ||
      e.state.check_fence(body->generation, body->wake_id) != fence_result::ok) {
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
  auto token = bearer(req.authorization);
  if (!token) return respond(fail(401, "TOKEN_INVALID", "a Bearer token is required"));
  auto claims = tokens_.verify(*token, clock_.wall_ms());
  if (!claims) {
    bool expired = claims.err().as<token_errc>() == token_errc::expired;
    return respond(fail(401, expired ? "TOKEN_EXPIRED" : "TOKEN_INVALID", claims.err().reason));
  }
  if (claims->kind != token_kind::claim || claims->subscription != e.key ||
      claims->incarnation != e.incarnation) {
    return respond(fail(401, "TOKEN_INVALID", "token is not valid for this subscription"));
  }
  auto body = parse_release_request(req.body);
  if (!body) return respond(from_config_error(body.err()));
  if (claims->generation != body->generation || claims->wake_id != body->wake_id || expire_if_due(e) ||
      e.state.check_fence(body->generation, body->wake_id) != fence_result::ok) {
    return respond(fail(409, "FENCED", "stale wake_id or generation"));
  }
  e.state.release();
  changed();
  if (e.lease_timer) sched_.cancel_timer(e.lease_timer);
  e.lease_timer = 0;
  respond(no_content());
  pump(e);  // PROTOCOL.md 7.2: pending work after release gets another wake event
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
  // Loopback at connect time only for URLs that named localhost / 127.0.0.x themselves (the development
  // exception), never for a public name that happens to resolve there.
  req.allow_loopback = opts_.allow_localhost_webhooks && !validate_webhook_url(req.url, url_policy{false});
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
    if (auto delay = e->state.on_delivery_failed(generation, clock_.mono_ms(), jitter))
      schedule_retry(*e, *delay);
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

// ---------------------------------------------------------------------------------------------------
// Stream events (reported after the command committed)

void subscription_manager::on_stream_created(const stream_info& s) {
  for (auto& [_, ep] : subs_) {
    entry& e = *ep;
    if (s.path.compare(0, e.root.size(), e.root) != 0) continue;
    std::string rel = s.path.substr(e.root.size());
    const auto& cfg = e.state.config();
    if (e.state.linked(rel)) {
      e.state.on_created(rel, s.tail_offset);
    } else if (e.glob && rel != cfg.wake_stream && e.glob->matches(rel)) {
      // PROTOCOL.md 6.2: a stream that appears later is linked before its first data.
      e.state.link_at_start(rel, false, s.tail_offset);
      changed();
    }
    pump(e);
  }
}

void subscription_manager::on_stream_appended(const stream_info& s) {
  for (auto& [_, ep] : subs_) {
    entry& e = *ep;
    if (s.path.compare(0, e.root.size(), e.root) != 0) continue;
    std::string rel = s.path.substr(e.root.size());
    const auto& cfg = e.state.config();
    if (e.state.linked(rel)) {
      e.state.on_tail(rel, s.tail_offset);
    } else if (e.glob && rel != cfg.wake_stream && e.glob->matches(rel)) {
      // Streams discovered by a matching append are linked before that append (PROTOCOL.md 6.2).
      e.state.link_at_start(rel, false, s.tail_offset);
      changed();
    }
    pump(e);
  }
}

void subscription_manager::on_stream_deleted(std::string_view path) {
  for (auto& [_, ep] : subs_) {
    entry& e = *ep;
    if (path.substr(0, e.root.size()) != e.root) continue;
    std::string rel(path.substr(e.root.size()));
    if (!e.state.linked(rel)) continue;
    e.state.on_deleted(rel);
    changed();
  }
}

}  // namespace weir::subscriptions

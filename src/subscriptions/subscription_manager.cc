#include "subscriptions/subscription_manager.h"

#include <fmt/format.h>

#include "base/log.h"
#include "subscriptions/control_responses.h"
#include "subscriptions/crypto_util.h"
#include "subscriptions/delivery_request.h"
#include "subscriptions/glob_matcher.h"
#include "subscriptions/subscription_json.h"

namespace weir::subscriptions {

// control_responses.h: the helpers shared by this class's translation units.
using namespace detail;

namespace {
// One subscription_log record around `payload`.
std::string framed(std::string_view payload) {
  std::string out;
  append_record(out, payload);
  return out;
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
    write_changes();
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
    control_response r = json(200, opts_.jwks ? opts_.jwks() : key_->jwks_json());
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
  if (opts_.durable) {
    // Cluster mode: an answer leaves once the changes it reports are committed in the subscription's
    // raft group, so that any node then shows them (docs/subscriptions.md, "Cluster").
    respond = [this, key, respond = std::move(respond)](control_response r) mutable {
      if (*alive_) flush_changes();
      opts_.durable(key, [respond = std::move(respond), r = std::move(r)](bool ok) mutable {
        respond(ok ? std::move(r)
                   : unavailable("the change could not be replicated (no quorum, or the "
                                 "subscription's group changed leader): retry"));
      });
    };
  }

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
          if (recording()) pending_records_.emplace_back(key, framed(delete_record(key)));
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
      req.body, config_limits{opts_.allow_localhost_webhooks, opts_.default_lease_ttl_ms,
                              opts_.webhook_allow_hosts, opts_.max_pattern_bytes});
  if (!cfg) return respond(from_config_error(cfg.err()));
  std::string key = std::string(req.root) + id;
  std::string hash = cfg->hash();
  if (auto it = subs_.find(key); it != subs_.end()) {
    if (it->second->hash != hash) {
      return respond(
          fail(409, "SUBSCRIPTION_ALREADY_EXISTS", "subscription exists with a different configuration"));
    }
    entry& e = *it->second;
    // An identical re-confirmation resumes a subscription that gave up retrying (max-webhook-retries).
    if (e.state.paused()) {
      log::info("subscription {}: re-confirmed, webhook delivery resumes", e.state.id());
      e.state.resume();
      changed();
      pump(e);
    }
    return respond(json(200, render_subscription(e.state, signing_for(req.origin, req.root))));
  }
  const std::size_t held = opts_.subscription_count ? opts_.subscription_count() : subs_.size();
  if (opts_.max_subscriptions != 0 && held >= opts_.max_subscriptions) {
    // What one client can make the node keep is bounded (docs/limits.md): a bounded number of
    // subscriptions per node; the answer names the limit.
    return respond(fail(
        403, "LIMIT_EXCEEDED",
        fmt::format("max-subscriptions ({}) reached: delete a subscription first", opts_.max_subscriptions)));
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
                                                             std::string hash, subscription_state state,
                                                             bool journal) {
  auto owned = std::make_unique<entry>(
      entry{root + id, root, origin, next_incarnation_++, std::move(hash), std::move(state)});
  entry& e = *owned;
  subs_[e.key] = std::move(owned);
  if (journal && recording()) pending_records_.emplace_back(e.key, framed(sub_record(persisted(e))));
  if (const auto& pattern = e.state.config().pattern) {
    e.glob = glob_matcher::compile(*pattern);
    WEIR_ASSERT(e.glob.has_value(), "validated pattern '{}' failed to compile", *pattern);
  }
  return e;
}

void subscription_manager::backfill(entry& e, std::function<void()> done, bool at_start) {
  if (!e.glob) return done();
  std::string key = e.key;
  std::uint64_t inc = e.incarnation;
  std::string root = e.root;
  host_.list_streams(root + e.glob->literal_prefix(),
                     [this, key, inc, root, done, at_start](std::vector<stream_info> all) {
                       sched_.post(guarded([this, key, inc, root, done, at_start, all = std::move(all)] {
                         if (entry* e2 = lookup(key, inc)) {
                           // PROTOCOL.md 6.2: eager backfill links matching existing streams at their current
                           // tail.
                           for (const auto& s : all) {
                             if (s.path.compare(0, root.size(), root) != 0) continue;
                             std::string rel = s.path.substr(root.size());
                             if (!e2->glob->matches(rel) || rel == e2->state.config().wake_stream) continue;
                             if (at_start && !e2->state.linked(rel)) {
                               e2->state.link_at_start(rel, false, s.tail_offset);
                             } else {
                               e2->state.link_at_tail(rel, false, s.tail_offset);
                             }
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
    st.restore(std::move(p.links), p.generation, p.failed, p.failed_attempts, retry_at, p.paused);
    entry& e = add_entry(p.root, p.origin, p.id, std::move(hash), std::move(st), false);
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
    // In a cluster a matching stream the restored state does not link was created while no node held
    // the subscription (a failover): linked before its first data, as if its creation had been seen.
    backfill(e, one_done, opts_.restore_links_at_start);
    one_done();
  }
  // A fresh log holding just the restored state (the old one may carry a long history, or be a
  // subscriptions.json from before the log existed).
  if (opts_.persist && *alive_) compact();
}

void subscription_manager::changed() {
  if (!recording() || persist_timer_ != 0 || !*alive_) return;
  persist_timer_ = sched_.add_timer(opts_.persist_delay_ms, guarded([this] {
                                      persist_timer_ = 0;
                                      write_changes();
                                    }));
}

persisted_subscription subscription_manager::persisted(const entry& e) const {
  const auto& st = e.state;
  std::int64_t now_mono = clock_.mono_ms();
  std::int64_t retry_wall =
      st.retry_at_ms() == 0 ? 0 : clock_.wall_ms() + std::max<std::int64_t>(0, st.retry_at_ms() - now_mono);
  return persisted_subscription{
      e.root,     e.origin,        st.id(),     st.config(),          st.created_at_wall_ms(),
      st.links(), st.generation(), st.failed(), st.failed_attempts(), retry_wall,
      st.paused()};
}

// Only what changed is written (O(changes), never O(state)), so that a stream creation under a wildcard
// costs O(1) bytes; the "sub" and "del" records were queued in order as they happened, link and counter
// changes are collected here.
void subscription_manager::write_changes() {
  std::vector<std::pair<std::string, std::string>> records = std::move(pending_records_);
  pending_records_.clear();
  for (auto& [key, ep] : subs_) {
    subscription_state& st = ep->state;
    for (const auto& path : st.changed_links()) {
      auto it = st.links().find(path);
      records.emplace_back(key, framed(it == st.links().end() ? unlink_record(key, path)
                                                              : link_record(key, path, it->second)));
    }
    if (st.counters_changed()) {
      persisted_subscription p = persisted(*ep);
      records.emplace_back(key, framed(state_record(key, p.generation, p.failed, p.failed_attempts,
                                                    p.retry_at_wall_ms, p.paused)));
    }
    st.take_changes();
  }
  if (opts_.replicate) {
    for (auto& [key, record] : records) opts_.replicate(key, std::move(record));
    return;
  }
  std::string batch;
  for (const auto& [_, record] : records) batch += record;
  if (batch.empty()) return;
  journal_bytes_ += batch.size();
  opts_.persist(journal_batch{false, std::move(batch)});
  if (journal_bytes_ > std::max<std::uint64_t>(opts_.compact_min_bytes, image_bytes_)) compact();
}

void subscription_manager::flush_changes() {
  if (!recording() || !*alive_) return;
  if (persist_timer_ != 0) {
    sched_.cancel_timer(persist_timer_);
    persist_timer_ = 0;
  }
  write_changes();
}

void subscription_manager::unload(const std::function<bool(const std::string& key)>& which) {
  for (auto it = subs_.begin(); it != subs_.end();) {
    if (!which(it->first)) {
      ++it;
      continue;
    }
    cancel_timers(*it->second);
    it = subs_.erase(it);
  }
  std::erase_if(pending_records_, [&](const auto& r) { return which(r.first); });
}

void subscription_manager::compact() {
  std::vector<persisted_subscription> all;
  all.reserve(subs_.size());
  for (auto& [_, e] : subs_) {
    all.push_back(persisted(*e));
    e->state.take_changes();  // the image holds them
  }
  pending_records_.clear();
  std::string image = encode_image(all);
  image_bytes_ = image.size();
  journal_bytes_ = 0;
  opts_.persist(journal_batch{true, std::move(image)});
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
// Stream events (reported after the command committed)

void subscription_manager::on_stream_created(const stream_info& s) {
  // PROTOCOL.md 6.2: a stream that appears later is linked before its first data.
  on_stream_event(s, &subscription_state::on_created);
}

void subscription_manager::on_stream_appended(const stream_info& s) {
  // Streams discovered by a matching append are linked before that append (PROTOCOL.md 6.2).
  on_stream_event(s, &subscription_state::on_tail);
}

void subscription_manager::on_stream_event(const stream_info& s, linked_update update) {
  for (auto& [_, ep] : subs_) {
    entry& e = *ep;
    if (s.path.compare(0, e.root.size(), e.root) != 0) continue;
    std::string rel = s.path.substr(e.root.size());
    const auto& cfg = e.state.config();
    if (e.state.linked(rel)) {
      (e.state.*update)(rel, s.tail_offset);
    } else if (e.glob && rel != cfg.wake_stream && e.glob->matches(rel)) {
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

#include "server/node.h"

#include <signal.h>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <thread>

#include "auth/authorizer.h"
#include "auth/listen_policy.h"
#include "base/fnv.h"
#include "base/log.h"
#include "cluster/cluster_identity.h"
#include "http/server.h"
#include "io/event_loop.h"
#include "io/signal_watcher.h"
#include "io/tls.h"
#include "protocol/header_values.h"
#include "protocol/stream_request.h"
#include "replica/cold_mover.h"
#include "replica/cold_restore.h"
#include "replica/raft_lane.h"
#include "replica/wal_recovery.h"
#include "server/access_log.h"
#include "server/node_metrics.h"
#include "server/owned_request.h"
#include "server/replication.h"
#include "server/reply.h"
#include "server/stream_shard.h"
#include "server/subscription_host.h"
#include "storage/dir_lock.h"
#include "tier/cold_fetcher.h"
#include "tier/cold_reader.h"
#include "tier/object_store.h"
#include "tier/object_store_workers.h"

namespace weir::server {

node::node(serve_config cfg, storage::env* storage_env)
    : cfg_(std::move(cfg)),
      cors_(cfg_.cors_allowed_origins),
      env_(storage_env ? storage_env : &storage::default_posix_env()) {
  http::server_options o;
  o.host = cfg_.host;
  o.port = cfg_.port;
  o.threads = cfg_.threads;
  o.limits.max_body_bytes = cfg_.body_limit;
  o.server_name = "weir";
  o.max_connections = cfg_.max_connections;
  o.max_connections_per_client = cfg_.max_connections_per_client;
  o.descriptor_reserve = cfg_.descriptor_reserve;
  o.body_budget_bytes = cfg_.body_budget_bytes;
  o.read_bytes_per_turn = cfg_.read_bytes_per_turn;
  o.max_stream_queue_bytes = cfg_.max_stream_queue_bytes;
  o.h2.enabled = cfg_.http2;
  o.h2.max_concurrent_streams = cfg_.http2_max_streams;
  o.h2.max_header_list_bytes = cfg_.http2_max_header_list_bytes;
  o.h2.stream_window_bytes = cfg_.http2_stream_window_bytes;
  o.h2.connection_window_bytes = cfg_.http2_connection_window_bytes;
  o.h2.connection_queue_bytes = cfg_.http2_connection_queue_bytes;
  // Live reads hold a request open for the long-poll timeout or the SSE lifetime.
  o.idle_timeout = std::chrono::milliseconds(std::max<std::int64_t>(60'000, cfg_.sse_close_after_ms + 5'000));
  if (!cfg_.tls_cert.empty()) {
    tls_ = std::make_shared<io::tls_context>(io::tls_options{.ktls = cfg_.tls_ktls});
    o.tls = tls_;  // loaded by start()
  }
  if (cfg_.metrics || !cfg_.access_log.empty()) {
    metrics_ = std::make_unique<node_metrics>(cfg_.metrics);
    o.observer = metrics_.get();
  }
  http_ = std::make_unique<http::server>(
      o, [this](const http::request& req, http::exchange ex) { on_request(req, ex); });
  if (metrics_) metrics_->set_cores(http_->threads());
  flush_timers_.assign(http_->threads(), 0);

  make_shards(http_->threads());
  subs_ = make_subscriptions(*this, http_->loop(0), clock_, cfg_.data_dir);
}

void node::make_shards(unsigned count) {
  shards_.clear();
  shard_options so;
  so.long_poll_timeout_ms = cfg_.long_poll_timeout_ms;
  so.read_chunk_bytes = cfg_.read_chunk_bytes;
  so.sse_close_after_ms = cfg_.sse_close_after_ms;
  so.sse_keep_alive_ms = cfg_.sse_keep_alive_ms;
  so.part.hot_bytes = std::max<std::size_t>(1, cfg_.hot_bytes / count);
  so.part.checkpoint_bytes = cfg_.checkpoint_bytes;
  so.max_in_flight_bytes = cfg_.max_in_flight_bytes;
  if (cfg_.cluster.enabled()) {
    so.admit_bytes = cfg_.cluster.proposal_bytes;
    so.fork_sweep_ms = static_cast<std::int64_t>(cfg_.cluster.fork_sweep_secs) * 1000;
    count = cfg_.cluster.lanes;  // one shard per lane
    so.part.hot_bytes = std::max<std::size_t>(1, cfg_.hot_bytes / count);
  }
  so.deleted_path_hold_ms = static_cast<std::int64_t>(cfg_.deleted_path_hold_ms);
  so.max_streams = cfg_.max_streams;
  for (unsigned i = 0; i < count; ++i) {
    so.part.core = i;
    // Shard i runs on core i modulo the cores: a data directory keeps the log count it was created
    // with (wal_recovery.h, recorded_log_count), whatever the core count of this start; a cluster
    // node's lane count is the cluster's.
    shards_.push_back(std::make_unique<stream_shard>(*this, http_->loop(i % http_->threads()), clock_, so));
  }
}

node::~node() = default;

stream_shard& node::owner_of(std::string_view path) {
  // A cluster node: the lane of the stream's raft group (docs/replication.md, "Lanes").
  if (cfg_.cluster.enabled()) return shard_of_group(cluster_group_of(path, cfg_.cluster.groups));
  return *shards_[owner_index(path, shard_count())];
}

std::vector<replication*> node::lanes() {
  std::vector<replication*> out;
  for (auto& s : shards_) {
    if (replication* r = s->replicated()) out.push_back(r);
  }
  return out;
}

void node::gather_shards(std::function<void(stream_shard&)> fn, std::function<void()> done) {
  // Shard by shard, each on its own loop, then back to shard 0's: no two shards' figures are read at
  // once, and nothing needs a lock.
  auto all = std::make_shared<std::vector<stream_shard*>>();
  for (auto& s : shards_) all->push_back(s.get());
  auto step = std::make_shared<std::function<void(std::size_t)>>();
  *step = [all, step, fn = std::move(fn), done = std::move(done)](std::size_t i) {
    if (i == all->size()) {
      (*all)[0]->loop().post([done, step] {
        done();
        *step = nullptr;  // breaks the cycle
      });
      return;
    }
    (*all)[i]->loop().post([all, step, fn, i] {
      fn(*(*all)[i]);
      (*step)(i + 1);
    });
  };
  (*step)(0);
}

void node::gather_lanes(std::function<void(replication&)> fn, std::function<void()> done) {
  gather_shards(
      [fn = std::move(fn)](stream_shard& s) {
        if (replication* r = s.replicated()) fn(*r);
      },
      std::move(done));
}

std::size_t node::stream_count() const {
  std::size_t n = 0;
  for (const auto& s : shards_) n += s->part().stream_count();
  return n;
}

std::uint16_t node::port() const {
  return http_->port();
}

void node::report_created(const streams::stream_meta& m) {
  if (!subs_ || !subs_->active()) return;
  http_->loop(0).post([this, m] { subs_->created(m); });
}

void node::report_appended(const streams::stream_meta& m) {
  if (!subs_ || !subs_->active()) return;
  http_->loop(0).post([this, m] { subs_->appended(m); });
}

void node::report_deleted(const std::string& path) {
  if (!subs_ || !subs_->active()) return;
  http_->loop(0).post([this, path] { subs_->deleted(path); });
}

void node::on_request(const http::request& req, http::exchange ex) {
  const bool get_or_head = req.method() == http::method::get || req.method() == http::method::head;
  if (req.path() == "/healthz" && get_or_head) {
    ex.set_tag(tag_of(request_kind::healthz));
    if (shards_[0]->replicated()) {
      // 503 while this node cannot reach a quorum in any of its lanes (each on its own loop).
      struct view {
        bool left = false;
        bool quorum = true;
        std::string upload_error;  // a lane's last failed upload (cold tier)
        bool refusing = false;     // a lane refuses appends: its budget of bytes not in the bucket is full
      };
      auto v = std::make_shared<view>();
      gather_lanes(
          [v](replication& lane) {
            v->left = v->left || lane.left();
            v->quorum = v->quorum && lane.has_quorum();
            if (const replica::cold_mover* m = lane.shard().part().mover()) {
              if (std::string e = m->uploads().last_error; !e.empty()) v->upload_error = std::move(e);
              v->refusing = v->refusing || lane.shard().part().local_budget_full();
            }
          },
          [v, ex] {
            protocol::response r;
            r.status = !v->left && v->quorum ? 200 : 503;
            r.add_static("Content-Type", "text/plain");
            const bool degraded = !v->upload_error.empty() || v->refusing;
            r.body = v->left           ? "removed from the cluster\n"
                     : r.status != 200 ? "no quorum\n"
                     : degraded        ? "degraded\n"
                                       : "ok\n";
            // The node serves (reads, and writes until its budget): 200, with what is wrong in the body.
            if (!v->upload_error.empty()) r.body += "cold tier uploads failing: " + v->upload_error + "\n";
            if (v->refusing) r.body += "appends refused: the budget of bytes not yet in the bucket is full\n";
            send_response(ex, std::move(r));
          });
      return;
    }
    if (cold_store_) return cold_health(std::move(ex));
    protocol::response r;
    r.status = 200;
    r.add_static("Content-Type", "text/plain");
    r.body = "ok\n";
    send_response(ex, std::move(r));
    return;
  }
  // What the page's Origin may do (cors-allowed-origins): every answer below carries it, errors too, so
  // that a page can read why it was refused.
  const http::header* origin_header = req.find("origin");
  const protocol::cors_grant cors =
      cors_.grant(origin_header ? std::optional<std::string_view>(origin_header->value) : std::nullopt);
  // Access control (docs/security.md): before everything but /healthz (/metrics needs admin; preflights
  // and the subscription callbacks are open by auth::classify). A query token is taken out of the request
  // (`stripped`) whether or not auth is on, so that nothing after this point can see or log it.
  std::optional<auth::stripped_request> stripped;
  if (auth_) {
    const auth::decision d =
        auth_->check(req, io::event_loop::current()->index(), clock_.wall_ms(), stripped);
    if (d.error != protocol::errc::ok) {
      send_response(ex, protocol::error_response(protocol::status_for(d.error), d.detail), cors);
      return;
    }
  } else {
    auth::strip_query_token(req, stripped);
  }
  const http::request& r = stripped ? stripped->get() : req;  // from here on: `r`, never `req`
  if (r.path() == "/metrics" && get_or_head && metrics_ && metrics_->counting()) {
    ex.set_tag(tag_of(request_kind::metrics));
    serve_metrics(ex);
    return;
  }
  if (r.path() == "/cluster/members") {
    route_members(r, ex, cors);
    return;
  }
  if (r.path() == "/cluster" && get_or_head) {
    replication* repl = cluster_route(ex, cors);
    if (!repl) return;
    // Every other lane renders its part on its own loop; lane 0 puts them together.
    auto parts = std::make_shared<std::vector<replication::lane_status>>();
    gather_lanes(
        [parts](replication& lane) {
          if (lane.lane() != 0) parts->push_back(lane.status_part());
        },
        [repl, parts, ex, cors] {
          protocol::response resp;
          resp.status = 200;
          resp.add_static("Content-Type", "application/json");
          resp.body = repl->status_json(*parts);
          send_response(ex, std::move(resp), cors);
        });
    return;
  }
  if (req.method() == http::method::options) {
    ex.set_tag(tag_of(request_kind::preflight));
    send_response(ex, protocol::preflight_response(), cors);
    return;
  }
  ex.set_tag(tag_of(kind_of(req.method())));  // refined below once the request is understood
  // PROTOCOL.md 6: the reserved `__ds` prefix is routed before stream operations.
  std::string_view root, rest;
  if (protocol::split_reserved_path(r.path(), root, rest)) {
    ex.set_tag(tag_of(request_kind::subscriptions));
    route_reserved(r, root, rest, ex);
    return;
  }
  protocol::parse_outcome parsed =
      protocol::parse_stream_request(r, {cfg_.max_path_length, cfg_.public_url, tls_ != nullptr});
  if (parsed.error != protocol::errc::ok) {
    send_response(ex, protocol::error_response(protocol::status_for(parsed.error)), cors);
    return;
  }
  parsed.request.cors = cors;
  const request_kind kind = kind_of(parsed.request);
  ex.set_tag(tag_of(kind));
  std::uint64_t live_id = 0;
  if (parsed.request.op == protocol::operation::read && parsed.request.live != protocol::live_mode::none) {
    live_id = next_live_id_.fetch_add(1);
    if (metrics_) metrics_->live_started(io::event_loop::current()->index(), kind);
  }
  stream_shard& owner = owner_of(parsed.request.path);
  if (live_id != 0) {
    // Registered before the request is posted: the owner sees the request before any cancel.
    ex.on_close([&owner, live_id] { owner.loop().post([&owner, live_id] { owner.cancel_live(live_id); }); });
  }
  if (&owner.loop() == io::event_loop::current()) {
    owner.handle(std::move(parsed.request), ex, live_id);
  } else {
    owner.loop().post([&owner, r = std::move(parsed.request), ex, live_id]() mutable {
      owner.handle(std::move(r), ex, live_id);
    });
  }
}

namespace {
// The one place a membership change's error becomes an HTTP status.
protocol::response membership_error(const error& e) {
  switch (e.as<cluster::membership_errc>()) {
    case cluster::membership_errc::invalid:
      return protocol::error_response({400, "membership change refused"}, e.reason);
    case cluster::membership_errc::unknown:
      return protocol::error_response({409, "this node is not a member yet"}, e.reason);
    case cluster::membership_errc::stale:
      return protocol::error_response({409, "another membership change came first"}, e.reason);
    case cluster::membership_errc::no_quorum:
      return protocol::error_response({503, "cannot reach a quorum", {}, "1"}, e.reason);
    case cluster::membership_errc::outcome_unknown:
      return protocol::error_response({503, "the change may or may not have been made", {}, "1"}, e.reason);
    default:
      return protocol::error_response({500, "membership change not recorded"}, e.reason);
  }
}
}  // namespace

replication* node::cluster_route(http::exchange& ex, const protocol::cors_grant& cors) {
  ex.set_tag(tag_of(request_kind::metrics));
  replication* repl = shards_[0]->replicated();
  if (!repl) {
    send_response(ex, protocol::error_response(protocol::status_for(protocol::errc::server_path_missing)),
                  cors);
  }
  return repl;
}

// GET: the desired membership. POST ?id=N&address=HOST:PORT: add node N as a voter. DELETE ?id=N: remove
// node N. A change answers 202 with the membership it made once group 0 decided it and this node applied
// it (409 when another change was decided first); the leaders of the groups then carry it out (GET
// /cluster shows every group's configuration).
void node::route_members(const http::request& r, http::exchange ex, const protocol::cors_grant& cors) {
  replication* repl = cluster_route(ex, cors);
  if (!repl) return;
  const http::method m = r.method();
  const bool read = m == http::method::get || m == http::method::head;
  if (!read && m != http::method::post && m != http::method::del) {
    send_response(ex, protocol::error_response({405, "method not allowed", "GET, HEAD, POST, DELETE"}), cors);
    return;
  }
  std::uint64_t id = 0;
  std::string address;
  std::string bad;
  if (!read) {
    auto params = protocol::parse_query(r.query());
    if (!params) bad = "a malformed query";
    for (const auto& p : params ? *params : std::vector<protocol::query_param>{}) {
      if (p.name == "id") {
        auto [end, ec] = std::from_chars(p.value.data(), p.value.data() + p.value.size(), id);
        if (p.value.empty() || ec != std::errc{} || end != p.value.data() + p.value.size() || id == 0)
          bad = "id: a node id from 1, got '" + p.value + "'";
      } else if (p.name == "address" && m == http::method::post) {
        address = p.value;
      } else {
        bad = "unknown parameter '" + p.name + "'";
      }
    }
    if (bad.empty() && id == 0)
      bad = m == http::method::post ? "?id=N&address=HOST:PORT expected" : "?id=N expected";
    if (bad.empty() && m == http::method::post && address.empty()) bad = "address=HOST:PORT expected";
  }
  if (!bad.empty()) {
    send_response(ex, protocol::error_response({400, "membership change refused"}, bad), cors);
    return;
  }
  shards_[0]->loop().post([repl, ex, cors, m, read, id, address = std::move(address)] {
    auto answer = [ex, cors, status = read ? 200 : 202](result<std::string> body) {
      if (!body) {
        send_response(ex, membership_error(body.err()), cors);
        return;
      }
      protocol::response resp;
      resp.status = status;
      resp.add_static("Content-Type", "application/json");
      resp.body = std::move(*body);
      send_response(ex, std::move(resp), cors);
    };
    if (m == http::method::post) {
      repl->add_member(id, address, std::move(answer));
    } else if (m == http::method::del) {
      repl->remove_member(id, std::move(answer));
    } else {
      answer(repl->membership_json());
    }
  });
}

void node::route_reserved(const http::request& req, std::string_view root, std::string_view rest,
                          http::exchange ex) {
  if (!subs_) {
    send_response(ex, protocol::error_response(protocol::status_for(protocol::errc::reserved_path)));
    return;
  }
  // The origin goes into callback_url and jwks_url: the configured public URL, else the Host the client
  // addressed if it is a plain host[:port].
  std::string origin = cfg_.public_url;
  if (origin.empty()) {
    const http::header* host = req.find("host");
    const std::string_view authority = host ? host->value : std::string_view("127.0.0.1");
    if (!protocol::valid_url_host(authority)) {
      send_response(ex, protocol::error_response(protocol::status_for(protocol::errc::bad_host)));
      return;
    }
    origin = (tls_ ? "https://" : "http://") + std::string(authority);
  }
  io::event_loop& home = http_->loop(0);
  if (&home == io::event_loop::current()) {
    subs_->handle(req, root, rest, origin, ex);
    return;
  }
  auto copy = std::make_shared<owned_request>(req);
  std::size_t root_at = static_cast<std::size_t>(root.data() - req.path().data());
  std::size_t rest_at = static_cast<std::size_t>(rest.data() - req.path().data());
  std::size_t root_len = root.size(), rest_len = rest.size();
  home.post([this, copy, root_at, root_len, rest_at, rest_len, origin, ex] {
    std::string_view path = copy->get().path();
    std::string_view r = rest_len == 0 ? std::string_view() : path.substr(rest_at, rest_len);
    subs_->handle(copy->get(), path.substr(root_at, root_len), r, origin, ex);
  });
}

namespace {
// A certificate close to its end gets a warning at each load (start, SIGHUP).
constexpr std::int64_t tls_expiry_warning_s = 14 * 86'400;

void log_tls_loaded(std::string_view when, const io::tls_cert_info& info) {
  log::info("weir serve: {}TLS certificate {} (serial {}), valid until {}", when, info.subject, info.serial,
            info.not_after);
  if (info.seconds_left < tls_expiry_warning_s) {
    log::warn("weir serve: the TLS certificate (serial {}) expires in {} hours ({})", info.serial,
              info.seconds_left / 3600, info.not_after);
  }
}
}  // namespace

std::string node::tls_key_file() const {
  return cfg_.tls_key.empty() ? cfg_.tls_cert : cfg_.tls_key;
}

void node::reload_tls() {
  // New handshakes take the new certificate; established sessions keep theirs.
  auto loaded = tls_->load(cfg_.tls_cert, tls_key_file());
  if (!loaded) {
    log::error("weir serve: SIGHUP: {}; the previous certificate stays in force", loaded.err().reason);
    return;
  }
  log_tls_loaded("SIGHUP: reloaded ", *loaded);
}

void node::reload() {
  if (tls_) reload_tls();
  // Peer-link TLS (docs/operations.md, "Cluster"): new peer connections take the new files.
  const bool peer_tls = !lanes().empty() && cfg_.cluster.peer_tls();
  for (replication* repl : peer_tls ? lanes() : std::vector<replication*>{}) {
    if (status st = repl->reload_peer_tls(); !st) {
      log::error("weir serve: SIGHUP: {}; the previous peer certificate stays in force", st.err().reason);
      break;
    }
  }
  if (!auth_ || cfg_.jwks_file.empty()) {
    if (!tls_ && !peer_tls) log::info("weir serve: SIGHUP: nothing to reload");
    return;
  }
  if (status st = auth_->reload_jwks(); !st) {
    log::error("weir serve: SIGHUP: {}; the previous keys stay in force", st.err().reason);
    return;
  }
  log::info("weir serve: SIGHUP: reloaded {} ({} keys)", cfg_.jwks_file, auth_->jwks_key_count());
}

void node::fail(const std::string& why) {
  log::error("weir serve: {}; stopping (exit status 1): restart the node once the cause is fixed", why);
  exit_code_.store(1);
  stop();
}

void node::stop() {
  if (stopping_.exchange(true)) return;
  if (access_log_) {
    for (unsigned i = 0; i < http_->threads(); ++i) {
      http_->loop(i).post([this, i] {
        if (flush_timers_[i] != 0) http_->loop(i).cancel_timer(flush_timers_[i]);
        flush_timers_[i] = 0;
      });
    }
  }
  if (subs_) http_->loop(0).post([this] { subs_->shutdown(); });
  for (auto& s : shards_) {
    stream_shard* sp = s.get();
    sp->loop().post([sp] { sp->stop(); });
  }
  http_->stop();
}

status node::open_cluster() {
  // One node of a cluster: raft's node log is the write-ahead log. Each lane (docs/replication.md,
  // "Lanes") has its shard, its data log (lane 0: data/, lane l: data-<l>/) so that stream bytes can
  // leave memory (data_log.h; opened before raft applies anything), its node log and peer links. Every
  // shard reads every lane's data log (a fork reads its source's records, which may be another lane's).
  const std::uint32_t lanes = cfg_.cluster.lanes;
  segments_.clear();
  std::vector<std::string> dirs;
  std::vector<storage::segment_reader*> readers;
  for (std::uint32_t l = 0; l < lanes; ++l) {
    dirs.push_back(
        storage::join_path(cfg_.data_dir, l == 0 ? std::string("data") : "data-" + std::to_string(l)));
    segments_.push_back(std::make_unique<storage::segment_reader>(*env_, dirs.back()));
  }
  // Then every lane's node log, where the records applied from raft stay (raft_lane::node_log_core).
  for (std::uint32_t l = 0; l < lanes; ++l)
    segments_.push_back(replica::raft_lane::node_log_reader(*env_, cfg_.data_dir, l));
  for (const auto& r : segments_) readers.push_back(r.get());
  // The node log syncs every batch; its segments are prepared ahead as the data logs' are, with fsync
  // always (storage::log_options::prepare_segments, raft::node_log_options::prepare_segments).
  const bool prepare = cfg_.prepare_segments && cfg_.fsync == "always";
  for (std::uint32_t l = 0; l < lanes; ++l) {
    if (auto st = shards_[l]->part().open_data_log(*env_, dirs[l], cfg_.segment_bytes, readers); !st)
      return st.err();
    auto repl = replication::open(*shards_[l], *env_, cfg_.data_dir, cfg_.cluster, prepare, l);
    if (!repl) return repl.err();
    shards_[l]->attach_replication(std::move(*repl));
  }
  replication::connect_lanes(this->lanes());
  // Subscriptions are replicated too: their changes are entries of lane 0's groups (subscriptions.md).
  if (subs_) subs_->attach_cluster(*shards_[0]->replicated());
  log::info(
      "weir serve: node {} of a cluster of {} ({} raft groups in {} lanes), peers on {}:{}, hot budget {} "
      "KiB",
      cfg_.cluster.node_id, cfg_.cluster.peers.size(), cfg_.cluster.groups, lanes,
      cfg_.cluster.peer_listen.host, cfg_.cluster.peer_listen.port, cfg_.hot_bytes >> 10);
  return {};
}

status node::start() {
  // Access control first: a node that may not run without it must not open its log either.
  const bool auth_on = !cfg_.api_keys.empty() || !cfg_.jwks_file.empty();
  if (std::string why = auth::listen_refusal(cfg_.host, auth_on, cfg_.insecure_no_auth); !why.empty()) {
    return make_error(std::errc::permission_denied, why);
  }
  if (auth_on) {
    auth::auth_settings as;
    as.api_keys = cfg_.api_keys;
    as.jwks_file = cfg_.jwks_file;
    as.jwt = {cfg_.jwt_issuer, cfg_.jwt_audience, static_cast<std::int64_t>(cfg_.jwt_leeway_s)};
    as.query_token_max_ttl_s = static_cast<std::int64_t>(cfg_.query_token_max_ttl_s);
    auto a = auth::authorizer::create(std::move(as), http_->threads());
    if (!a) return a.err();
    auth_ = std::move(*a);
    log::info("weir serve: access control on: {} API keys, JWTs {}", cfg_.api_keys.size(),
              cfg_.jwks_file.empty()
                  ? std::string("off")
                  : cfg_.jwks_file + " (" + std::to_string(auth_->jwks_key_count()) + " keys)");
  } else if (!auth::is_loopback_host(cfg_.host)) {
    log::warn(
        "weir serve: access control OFF on {} (--insecure-no-auth): every client may create, append "
        "to and delete every stream",
        cfg_.host);
  }
  if (!cfg_.tls_key.empty() && cfg_.tls_cert.empty()) {
    return make_error(std::errc::invalid_argument, "tls-key " + cfg_.tls_key + " given without tls-cert");
  }
  if (tls_) {
    auto loaded = tls_->load(cfg_.tls_cert, tls_key_file());
    if (!loaded) return loaded.err();
    log_tls_loaded("", *loaded);
  }
  std::error_code ec;
  std::filesystem::create_directories(cfg_.data_dir, ec);
  if (ec)
    return make_error(std::errc::io_error, "cannot create data dir " + cfg_.data_dir + ": " + ec.message());
  // Before anything reads or writes the directory: one process per data directory.
  auto lock = storage::dir_lock::acquire(cfg_.data_dir);
  if (!lock) return lock.err();
  dir_lock_ = std::make_unique<storage::dir_lock>(std::move(*lock));
  // A cluster node's directory names its node id and group count; single-node data is never taken over.
  auto identity = cluster::claim_identity(*env_, cfg_.data_dir, cfg_.cluster);
  if (!identity) return identity.err();
  cfg_.cluster.incarnation = identity->incarnation;  // sent in every peer-link hello
  // The bucket first: a restore writes the logs that recovery then opens.
  if (auto st = connect_cold(); !st) return st;
  if (cfg_.cluster.enabled()) {
    const std::string marker =
        storage::join_path(storage::join_path(cfg_.data_dir, "wal"), replica::restoring_marker);
    if (env_->file_exists(marker)) {
      return make_error(std::errc::invalid_argument,
                        cfg_.data_dir +
                            " holds a restore from the bucket that did not finish: empty it and start "
                            "with --restore again");
    }
    if (auto st = open_cluster(); !st) return st;
  } else if (cfg_.durable) {
    // A data directory keeps its log count (the cores it was created with); its shards run on this
    // start's cores, several on one core or some cores with none (they parse HTTP only).
    auto logs = replica::recorded_log_count(*env_, cfg_.data_dir, http_->threads());
    if (!logs) return logs.err();
    if (*logs != shard_count()) {
      make_shards(*logs);
      log::info(
          "weir serve: the data dir has {} logs (it was created with {} threads); running them on {} cores",
          *logs, *logs, http_->threads());
    }
    // Before any loop runs: replay the logs into the shards, then log every command from now on.
    replica::wal_options wo;
    wo.data_dir = cfg_.data_dir;
    wo.segment_bytes = cfg_.segment_bytes;
    wo.gather = std::chrono::microseconds(cfg_.group_commit_gather_us);
    wo.prepare_segments = cfg_.prepare_segments;
    auto policy = storage::parse_sync_policy(cfg_.fsync);
    if (!policy) return policy.err();
    wo.sync = *policy;
    std::vector<replica::partition*> parts;
    for (auto& s : shards_) parts.push_back(&s->part());
    const auto began = std::chrono::steady_clock::now();
    auto rec = replica::open_durable_store(*env_, wo, parts, segments_);
    if (!rec) return rec.err();
    recovery_ = *rec;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    log::info(
        "weir serve: recovered in {:.2f} s: {} checkpoints ({} streams), {} commands replayed ({} forks, {} "
        "torn "
        "bytes cut), fsync {}, hot budget {} MiB",
        secs, rec->checkpoints, rec->checkpoint_streams, rec->records, rec->forks_stitched,
        rec->truncated_bytes, cfg_.fsync, cfg_.hot_bytes >> 20);
  }
  if (!segments_.empty()) {
    // Reads of data evicted from memory run on the cold_reader's threads, not on the loops.
    cold_reads_ = std::make_unique<tier::cold_reader>(2);
    for (auto& s : shards_) s->part().attach_cold_reader(cold_reads_.get(), s->loop());
  }
  if (auto st = open_cold(); !st) return st;
  if (!cfg_.access_log.empty()) {
    auto opened = access_log::open(cfg_.access_log, cfg_.log_format == "json", http_->threads());
    if (!opened) return opened.err();
    access_log_ = std::move(*opened);
    metrics_->set_access_log(access_log_.get());
  }
  for (auto& s : shards_) s->part().recount_streams();
  status st = http_->start();
  if (!st) return st;
  for (auto& s : shards_) {
    stream_shard* sp = s.get();
    sp->loop().post([sp] {
      sp->start();
      sp->part().start_cold();
    });
  }
  if (access_log_) {
    for (unsigned i = 0; i < http_->threads(); ++i)
      http_->loop(i).post([this, i] { arm_access_log_flush(i); });
  }
  log::info(
      "weir serve: listening on {}:{} ({}, {} threads, {} logs, data dir {}, long-poll {} ms, subscriptions "
      "{}, at "
      "most {} connections)",
      cfg_.host, http_->port(), tls_ ? "https" : "http", http_->threads(), shard_count(), cfg_.data_dir,
      cfg_.long_poll_timeout_ms, subs_ ? "on" : "off", http_->connection_cap());
  return {};
}

void node::run(bool handle_signals) {
  std::unique_ptr<io::signal_watcher> watcher;
  if (handle_signals) {
    watcher = std::make_unique<io::signal_watcher>([this](int signo) {
      if (signo == SIGHUP) return reload();
      log::info("weir serve: signal {}, stopping", signo);
      stop();
    });
  }
  http_->run();
  if (access_log_) access_log_->flush_all();  // every loop has returned
  log::info("weir serve: stopped");
}

}  // namespace weir::server

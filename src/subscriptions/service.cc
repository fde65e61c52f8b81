#include "subscriptions/service.h"

#include <strings.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>

#include "base/assert.h"
#include "base/log.h"
#include "http/exchange.h"
#include "io/event_loop.h"
#include "storage/env.h"
#include "subscriptions/cluster_port.h"
#include "subscriptions/subscription_cluster.h"
#include "subscriptions/subscription_log.h"
#include "subscriptions/subscription_manager.h"

namespace weir::subscriptions {
namespace {

// The home event loop as a scheduler.
class loop_scheduler final : public scheduler {
 public:
  explicit loop_scheduler(io::event_loop& loop) : loop_(loop) {}
  void post(std::function<void()> fn) override { loop_.post(std::move(fn)); }
  std::uint64_t add_timer(std::int64_t delay_ms, std::function<void()> fn) override {
    return loop_.add_timer(std::chrono::milliseconds(delay_ms), std::move(fn));
  }
  void cancel_timer(std::uint64_t id) override { loop_.cancel_timer(id); }

 private:
  io::event_loop& loop_;
};

std::shared_ptr<const signing_key> load_key(const std::string& data_dir) {
  if (data_dir.empty()) {
    log::warn("subscriptions: no data_dir, the webhook signing key lives in memory only");
    auto k = signing_key::generate();
    if (!k) throw std::runtime_error("webhook signing key: " + k.err().reason);
    return *k;
  }
  auto k = signing_key::load_or_create(data_dir);
  if (!k) throw std::runtime_error("webhook signing key: " + k.err().reason);
  return *k;
}

// Answers on the exchange's own loop (the connection's core), which need not be the home loop.
void answer(http::exchange ex, control_response r) {
  auto send = [ex, r = std::move(r)]() mutable {
    std::vector<http::header> headers;
    if (!r.content_type.empty()) headers.push_back(http::header{"Content-Type", r.content_type});
    for (const auto& [name, value] : r.headers) headers.push_back(http::header{name, value});
    ex.respond(r.status, headers, r.body);
  };
  io::event_loop* target = ex.loop();
  if (target == nullptr || target == io::event_loop::current()) {
    send();
  } else {
    target->post(std::move(send));
  }
}

manager_options make_manager_options(const service_options& opts, subscription_journal* journal) {
  manager_options m;
  m.allow_localhost_webhooks = opts.allow_localhost_webhooks;
  m.default_lease_ttl_ms = opts.default_lease_ttl_ms;
  m.webhook_allow_hosts = opts.webhook_allow_hosts;
  m.max_webhook_retries = opts.max_webhook_retries;
  m.max_subscriptions = opts.max_subscriptions;
  m.max_pattern_bytes = opts.max_pattern_bytes;
  if (journal) m.persist = [journal](journal_batch b) { journal->submit(std::move(b)); };
  return m;
}

// Start-up: opens <data_dir>/subscriptions.log and replays it. A log that cannot be read stops start-up
// rather than being overwritten. A subscriptions.json from before the log is read once (the restore
// compacts it into the log, then it is removed).
std::unique_ptr<subscription_journal> open_journal(const std::string& data_dir, bool cluster,
                                                   std::vector<persisted_subscription>& restored,
                                                   bool& migrated) {
  migrated = false;
  if (data_dir.empty() || cluster) return nullptr;  // a cluster node's subscriptions live in its raft log
  storage::env& env = storage::default_posix_env();
  std::string log_path = data_dir + "/subscriptions.log";
  std::string json_path = data_dir + "/subscriptions.json";
  bool fresh = !env.file_exists(log_path);
  auto journal = subscription_journal::open(env, log_path, restored);
  if (!journal) throw std::runtime_error("subscriptions: " + journal.err().reason);
  if (fresh && env.file_exists(json_path)) {
    auto text = read_snapshot_file(json_path);
    if (!text) throw std::runtime_error("subscriptions: " + text.err().reason);
    auto subs = decode_snapshot(text->value_or(""));
    if (!subs) throw std::runtime_error("subscriptions: " + json_path + ": " + subs.err().reason);
    restored = std::move(*subs);
    migrated = true;
  }
  if (!restored.empty())
    log::info("subscriptions: restored {} subscription(s) from {}", restored.size(), log_path);
  return std::move(*journal);
}

}  // namespace

struct service::impl {
  impl(io::event_loop& home, stream_host& host, const clock_source& clock, service_options opts)
      : home_loop(home),
        sched(home),
        key(load_key(opts.data_dir)),  // creates data_dir when missing
        journal(open_journal(opts.data_dir, opts.cluster, restored, migrated)),
        manager(sched, host, sender, clock, key, token_signer(token_signer::random_secret()),
                cluster_options(opts, make_manager_options(opts, journal.get()))) {
    if (opts.allow_localhost_webhooks) {
      log::warn(
          "subscriptions: allow-loopback-webhooks is on: webhooks may POST over plain HTTP to this "
          "host's loopback ports (PROTOCOL.md 12.8 development exception; never in production)");
    }
    // Restored on the home loop: it arms timers, which only the loop's own thread may touch. The file is
    // read here so a bad log still stops start-up.
    count.store(restored.size(), std::memory_order_release);
    if (!restored.empty()) {
      home.post([this, json = opts.data_dir + "/subscriptions.json"]() mutable {
        manager.restore(std::move(restored));  // writes a compacted log
        count.store(manager.size(), std::memory_order_release);
        if (migrated && journal) {
          journal->flush();
          std::error_code ec;
          std::filesystem::remove(json, ec);
          log::info("subscriptions: moved {} into subscriptions.log", json);
        }
      });
    }
  }

  // Cluster mode: the manager's hooks reach `cluster`, which attach_cluster() creates later.
  manager_options cluster_options(const service_options& opts, manager_options m) {
    if (!opts.cluster) return m;
    m.persist = nullptr;
    m.replicate = [this](const std::string& sub, std::string record) {
      if (cluster) cluster->replicate(sub, std::move(record));
    };
    m.durable = [this](const std::string& sub, std::function<void(bool)> done) {
      if (!cluster) return done(false);
      cluster->durable(sub, std::move(done));
    };
    m.jwks = [this] { return cluster ? cluster->jwks_json() : key->jwks_json(); };
    m.subscription_count = [this] { return cluster ? cluster->subscription_count() : manager.size(); };
    m.restore_links_at_start = true;
    return m;
  }

  io::event_loop& home_loop;
  loop_scheduler sched;
  curl_webhook_sender sender;
  std::shared_ptr<const signing_key> key;
  std::vector<persisted_subscription> restored;  // filled by open_journal, handed to the manager
  bool migrated = false;
  std::unique_ptr<subscription_journal> journal;  // outlives the manager, which feeds it
  std::unique_ptr<subscription_cluster> cluster;  // cluster mode; outlives the manager, which feeds it
  subscription_manager manager;
  std::atomic<std::size_t> count{0};  // manager.size(), readable from any core
};

service::service(io::event_loop& home, stream_host& host, const clock_source& clock, service_options opts)
    : impl_(std::make_unique<impl>(home, host, clock, std::move(opts))) {}

service::~service() {
  if (impl_) shutdown();
}

void service::handle(const http::request& req, std::string_view root, std::string_view rest,
                     std::string_view origin, http::exchange ex) {
  std::string_view authorization;
  for (const auto& h : req.headers()) {
    if (h.name.size() == 13 && strncasecmp(h.name.data(), "authorization", 13) == 0) {
      authorization = h.value;
      break;
    }
  }
  handle(control_request{req.method(), req.body, authorization, root, rest, origin}, std::move(ex));
}

void service::handle(const control_request& req, http::exchange ex) {
  if (impl_->cluster) {
    // Answered by the leader of the subscription's raft group, wherever it is.
    impl_->cluster->handle(req, [ex](control_response r) { answer(ex, std::move(r)); });
    return;
  }
  // Count one more while the request may add a subscription: its backfill lists the shards'
  // streams asynchronously, and a stream created on a shard after that listing must be reported.
  impl_->count.fetch_add(1, std::memory_order_acq_rel);
  impl_->manager.handle(req, [ex](control_response r) { answer(ex, std::move(r)); });
  impl_->count.store(impl_->manager.size(), std::memory_order_release);
}

void service::on_stream_created(const stream_info& s) {
  impl_->manager.on_stream_created(s);
}
void service::on_stream_appended(const stream_info& s) {
  impl_->manager.on_stream_appended(s);
}
void service::on_stream_deleted(std::string_view path) {
  impl_->manager.on_stream_deleted(path);
}

bool service::has_subscriptions() const {
  return impl_->count.load(std::memory_order_acquire) != 0;
}

service::stats service::figures() const {
  const auto d = impl_->manager.deliveries();
  // A cluster node holds every subscription of the cluster in its replica (it serves those it leads).
  const std::size_t held = impl_->cluster ? impl_->cluster->subscription_count() : impl_->manager.size();
  return stats{held, d.ok, d.failed};
}

void service::attach_cluster(cluster_port& port) {
  WEIR_ASSERT(!impl_->cluster, "attach_cluster called twice");
  impl* p = impl_.get();
  impl_->cluster = std::make_unique<subscription_cluster>(
      impl_->sched, port, impl_->key, subscription_cluster::options{},
      [p] { p->count.store(p->manager.size(), std::memory_order_release); });
  impl_->cluster->attach(impl_->manager);
  // Its timer belongs to the home loop's thread.
  impl_->home_loop.post([p] {
    if (p->cluster) p->cluster->start();
  });
}

void service::apply_entry(std::uint32_t group, std::span<const std::byte> payload) {
  if (impl_->cluster) impl_->cluster->apply(group, payload);
}

std::vector<std::byte> service::snapshot_part(std::uint32_t group) const {
  return impl_->cluster ? impl_->cluster->snapshot_part(group) : std::vector<std::byte>{};
}

status service::restore_part(std::uint32_t group, std::span<const std::byte> blob) {
  if (!impl_->cluster) return {};
  return impl_->cluster->restore_part(group, blob);
}

void service::serve_leader_call(std::uint32_t group, std::span<const std::byte> request,
                                std::function<void(std::optional<std::vector<std::byte>>)> reply) {
  if (!impl_->cluster) return reply(std::nullopt);
  impl_->cluster->serve(group, request, std::move(reply));
}

void service::shutdown() {
  if (impl_->cluster) impl_->cluster->stop();
  impl_->sender.shutdown();
  impl_->manager.shutdown();  // hands over pending changes
  if (impl_->journal) impl_->journal->close();
}

}  // namespace weir::subscriptions

#include "server/subscription_host.h"

#if defined(WEIR_HAVE_SUBSCRIPTIONS)

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string_view>

#include "io/event_loop.h"
#include "protocol/json_mode.h"
#include "protocol/offset_token.h"
#include "server/node.h"
#include "server/replication.h"
#include "server/stream_shard.h"
#include "storage/types.h"
#include "subscriptions/cluster_port.h"
#include "subscriptions/service.h"

namespace weir::server {

namespace {

subscriptions::stream_info to_info(const streams::stream_meta& m) {
  return subscriptions::stream_info{m.path, protocol::format_offset(m.tail), m.content_type};
}

// stream_host over the shards: each question becomes a message to the shard(s) that own the streams.
class shard_stream_host final : public subscriptions::stream_host {
 public:
  explicit shard_stream_host(node& n) : node_(n) {}

  void list_streams(std::string prefix,
                    std::function<void(std::vector<subscriptions::stream_info>)> done) override {
    struct gather {
      std::mutex mu;
      std::vector<subscriptions::stream_info> all;
      std::atomic<unsigned> left;
      std::function<void(std::vector<subscriptions::stream_info>)> done;
    };
    auto g = std::make_shared<gather>();
    g->left = node_.shard_count();
    g->done = std::move(done);
    for (unsigned i = 0; i < node_.shard_count(); ++i) {
      stream_shard& s = node_.shard(i);
      s.loop().post([&s, g, prefix] {
        auto metas = s.part().machine().list(prefix, s.now_ms());
        {
          std::lock_guard lock(g->mu);
          for (const auto& m : metas) {
            // Only what is durable (a stream whose create is in flight is not listed yet).
            streams::read_result v = s.part().head_visible(m.path);
            if (v.code == streams::errc::ok) g->all.push_back(to_info(*v.meta));
          }
        }
        if (g->left.fetch_sub(1) == 1) g->done(std::move(g->all));
      });
    }
  }

  void get_stream(std::string path,
                  std::function<void(std::optional<subscriptions::stream_info>)> done) override {
    stream_shard& s = node_.owner_of(path);
    s.loop().post([&s, path = std::move(path), done = std::move(done)] {
      streams::read_result r = s.part().head_visible(path);
      if (r.code != streams::errc::ok) return done(std::nullopt);
      done(to_info(*r.meta));
    });
  }

  void append_json(std::string path, std::string body,
                   std::function<void(result<std::string>)> done) override {
    stream_shard& s = node_.owner_of(path);
    s.loop().post([&s, path = std::move(path), body = std::move(body), done = std::move(done)] {
      streams::append_command c;
      c.path = path;
      c.content_type = "application/json";
      c.body = protocol::json_payload(body);
      c.now_ms = s.now_ms();
      // Answered once the append is durable (or failed), like a client's append.
      (void)s.execute(c, [done](replica::durable_result& r) {
        if (r.failure != replica::errc::ok)
          return done(make_error(storage::errc::io_error, "append to wake stream failed: " + r.reason));
        if (r.o.code != streams::errc::ok) return done(make_error(r.o.code, "append to wake stream failed"));
        done(protocol::format_offset(r.o.meta->tail));
      });
    });
  }

 private:
  node& node_;
};

// cluster_port over lane 0's replication (everything on core 0, the service's home).
class replication_port final : public subscriptions::cluster_port {
 public:
  explicit replication_port(replication& r) : r_(r) {}

  std::uint64_t node_id() const override { return r_.node_id(); }
  // Lane 0's groups only: the service and lane 0 share core 0 (replication::subscription_group_of).
  std::uint32_t group_of(std::string_view key) const override { return r_.subscription_group_of(key); }
  std::vector<group_view> groups() const override {
    std::vector<group_view> out;
    for (const auto& [leads, term] : r_.group_views()) out.push_back(group_view{leads, term});
    return out;
  }
  bool leads(std::uint32_t group) const override { return r_.leads_group(group); }
  void propose_here(std::uint32_t group, std::vector<std::byte> payload,
                    std::function<void(bool)> done) override {
    r_.submit_entry(group, payload, true, std::move(done));
  }
  void propose(std::uint32_t group, std::vector<std::byte> payload, std::function<void(bool)> done) override {
    r_.submit_entry(group, payload, false, std::move(done));
  }
  void caught_up(std::uint32_t group, std::function<void(bool)> ready) override {
    r_.linearize_group(group, std::move(ready));
  }
  void call_leader(std::uint32_t group, std::vector<std::byte> request,
                   std::function<void(result<std::vector<std::byte>>)> done) override {
    r_.call_leader(group, std::move(request), std::move(done));
  }

 private:
  replication& r_;
};

class service_glue final : public subscriptions_glue, public subscription_entries {
 public:
  service_glue(node& n, io::event_loop& home, const clock_source& clock, const std::string& data_dir)
      : host_(n), service_(home, host_, clock, make_options(n.config(), data_dir)) {}
  ~service_glue() override {
    if (repl_ != nullptr) repl_->attach_subscriptions(nullptr);
  }

  void handle(const http::request& req, std::string_view root, std::string_view rest, std::string_view origin,
              http::exchange ex) override {
    service_.handle(req, root, rest, origin, ex);
  }
  void created(const streams::stream_meta& m) override { service_.on_stream_created(to_info(m)); }
  void appended(const streams::stream_meta& m) override { service_.on_stream_appended(to_info(m)); }
  void deleted(const std::string& path) override { service_.on_stream_deleted(path); }
  void shutdown() override { service_.shutdown(); }
  void attach_cluster(replication& r) override {
    repl_ = &r;
    port_ = std::make_unique<replication_port>(r);
    service_.attach_cluster(*port_);
    r.attach_subscriptions(this);
  }
  // subscription_entries (core 0)
  void apply(std::uint32_t group, std::span<const std::byte> payload) override {
    service_.apply_entry(group, payload);
  }
  void serve(std::uint32_t group, std::span<const std::byte> request,
             std::function<void(std::optional<std::vector<std::byte>>)> reply) override {
    service_.serve_leader_call(group, request, std::move(reply));
  }
  std::vector<std::byte> snapshot_part(std::uint32_t group) const override {
    return service_.snapshot_part(group);
  }
  status restore_part(std::uint32_t group, std::span<const std::byte> part) override {
    return service_.restore_part(group, part);
  }
  bool active() const override { return service_.has_subscriptions(); }
  figures stats() const override {
    const auto s = service_.figures();
    return {s.subscriptions, s.deliveries_ok, s.deliveries_failed};
  }

 private:
  static subscriptions::service_options make_options(const serve_config& cfg, const std::string& data_dir) {
    subscriptions::service_options o;
    o.data_dir = data_dir;
    o.allow_localhost_webhooks = cfg.allow_loopback_webhooks;
    std::string_view hosts = cfg.webhook_allow_hosts;  // validated: names separated by commas
    while (!hosts.empty()) {
      std::string_view name = hosts.substr(0, hosts.find(','));
      o.webhook_allow_hosts.emplace_back(name);
      hosts.remove_prefix(std::min(hosts.size(), name.size() + 1));
    }
    o.max_webhook_retries = static_cast<int>(cfg.max_webhook_retries);
    o.max_subscriptions = cfg.max_subscriptions;
    o.max_pattern_bytes = cfg.max_subscription_pattern_bytes;
    o.cluster = cfg.cluster.enabled();
    return o;
  }

  shard_stream_host host_;
  replication* repl_ = nullptr;
  std::unique_ptr<replication_port> port_;  // before service_: the service uses it until it is destroyed
  subscriptions::service service_;
};

}  // namespace

std::unique_ptr<subscriptions_glue> make_subscriptions(node& n, io::event_loop& home,
                                                       const clock_source& clock,
                                                       const std::string& data_dir) {
  return std::make_unique<service_glue>(n, home, clock, data_dir);
}

}  // namespace weir::server

#else

namespace weir::server {
std::unique_ptr<subscriptions_glue> make_subscriptions(node&, io::event_loop&, const clock_source&,
                                                       const std::string&) {
  return nullptr;
}
}  // namespace weir::server

#endif

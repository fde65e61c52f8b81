#include "http/server.h"

#include <unistd.h>

#include <atomic>
#include <ctime>
#include <thread>
#include <vector>

#include "base/log.h"
#include "http/admission.h"
#include "http/body_budget.h"
#include "http/listener.h"
#include "http/loop_context.h"
#include "io/cpu.h"
#include "io/event_loop.h"
#include "io/socket.h"
#include "io/tls.h"

namespace weir::http {
namespace {

enum class server_errc { bind = 1, already_started = 2 };

// The sweep that enforces connection timeouts runs at a quarter of the smallest timeout, between 5 ms
// and 1 s, so a timeout fires at most 25% late.
std::chrono::milliseconds sweep_interval(const server_options& o) {
  auto m = std::min({o.header_timeout, o.body_timeout, o.idle_timeout, o.write_timeout});
  auto i = m / 4;
  return std::clamp(i, std::chrono::milliseconds(5), std::chrono::milliseconds(1000));
}

void schedule_sweep(loop_context* ctx, std::chrono::milliseconds every) {
  ctx->loop->add_timer(every, [ctx, every] {
    ctx->sweep();
    if (!ctx->draining || !ctx->active.empty()) schedule_sweep(ctx, every);
  });
}

// Date changes once per second: wake at the next second boundary of the wall clock.
void schedule_date(loop_context* ctx) {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  ctx->update_date(ts.tv_sec);
  auto to_next = std::chrono::milliseconds(1000 - ts.tv_nsec / 1'000'000);
  ctx->loop->add_timer(to_next, [ctx] {
    if (!ctx->draining) schedule_date(ctx);
  });
}

}  // namespace

struct server::impl {
  server_options opts;
  handler on_request;
  std::vector<std::unique_ptr<io::event_loop>> loops;
  std::vector<std::unique_ptr<loop_context>> contexts;
  std::unique_ptr<admission> limits;
  std::unique_ptr<body_budget> bodies;
  int address_claim = -1;  // io::claim_listen_address: held while the listeners live
  std::uint16_t port = 0;
  bool started = false;
  std::atomic<bool> stopping{false};
};

server::server(server_options opts, handler h) : impl_(std::make_unique<impl>()) {
  impl_->opts = std::move(opts);
  if (impl_->opts.threads == 0) impl_->opts.threads = 1;
  impl_->on_request = std::move(h);
  for (unsigned i = 0; i < impl_->opts.threads; ++i) {
    impl_->loops.push_back(std::make_unique<io::event_loop>(i));
  }
}

server::~server() {
  // Contexts (connections, listeners) go before the loops they are registered with.
  impl_->contexts.clear();
  if (impl_->address_claim >= 0) ::close(impl_->address_claim);
}

status server::start() {
  auto& s = *impl_;
  if (s.started) return make_error(server_errc::already_started, "server already started");
  if (s.opts.tls && !s.opts.tls->loaded()) return make_error(server_errc::bind, "TLS: no certificate loaded");
  if (s.opts.tls) s.opts.tls->offer_h2(s.opts.h2.enabled);
  std::uint16_t port = s.opts.port;
  // Only the threads of this process may share the port (SO_REUSEPORT would let another process in).
  auto claim = io::claim_listen_address(s.opts.host, port);
  if (!claim)
    return make_error(server_errc::bind,
                      "listen on " + s.opts.host + ":" + std::to_string(port) + ": " + claim.err().reason);
  s.address_claim = *claim;
  const std::size_t descriptors = raise_descriptor_limit();
  s.limits = std::make_unique<admission>(
      http::connection_cap(descriptors, s.opts.descriptor_reserve, s.opts.max_connections),
      s.opts.max_connections_per_client);
  s.bodies = std::make_unique<body_budget>(s.opts.body_budget_bytes);
  for (unsigned i = 0; i < s.loops.size(); ++i) {
    auto fd = io::listen_tcp(s.opts.host, port);
    if (!fd) {
      s.contexts.clear();
      return make_error(server_errc::bind,
                        "listen on " + s.opts.host + ":" + std::to_string(port) + ": " + fd.err().reason);
    }
    if (i == 0) {
      auto bound = io::local_port(*fd);
      if (!bound) return bound.err();
      port = *bound;  // the other cores bind the same (possibly ephemeral) port
    }
    auto ctx = std::make_unique<loop_context>(*s.loops[i], s.opts, s.on_request);
    ctx->limits = s.limits.get();
    ctx->bodies = s.bodies.get();
    ctx->accept = std::make_unique<listener>(*ctx, *fd);
    if (!ctx->accept->start()) return make_error(server_errc::bind, "epoll registration of the listener");
    io::event_loop* loop = s.loops[i].get();
    ctx->on_drained = [loop] { loop->stop(); };
    schedule_sweep(ctx.get(), sweep_interval(s.opts));
    schedule_date(ctx.get());
    s.contexts.push_back(std::move(ctx));
  }
  s.port = port;
  s.started = true;
  return {};
}

std::uint16_t server::port() const {
  return impl_->port;
}

std::size_t server::connection_cap() const {
  return impl_->limits ? impl_->limits->max_total() : 0;
}

unsigned server::threads() const {
  return static_cast<unsigned>(impl_->loops.size());
}

io::event_loop& server::loop(unsigned i) {
  return *impl_->loops.at(i);
}

void server::run() {
  auto& s = *impl_;
  if (!s.started) return;
  auto run_loop = [&s](unsigned i) {
    if (s.opts.pin_cpus) {
      if (auto st = io::pin_current_thread(i); !st) log::warn("core {}: {}", i, st.err().reason);
    }
    s.loops[i]->run();
  };
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < s.loops.size(); ++i) threads.emplace_back(run_loop, i);
  run_loop(0);
  for (auto& t : threads) t.join();
}

server_stats server::stats() const {
  server_stats st;
  for (const auto& c : impl_->contexts) {
    st.accepted += c->accepted.get();
    st.rejected += c->rejected.get();
    st.requests += c->requests.get();
    st.sends += c->sends.get();
    st.open_connections += c->open.get();
    st.bodies_refused += c->bodies_refused.get();
    st.streams_dropped += c->streams_dropped.get();
    st.reads_deferred += c->reads_deferred.get();
    st.h2_connections += c->h2_sessions.get();
    st.h2_streams += c->h2_streams.get();
  }
  if (impl_->bodies) st.body_bytes_reserved = impl_->bodies->used();
  return st;
}

void server::stop() {
  auto& s = *impl_;
  if (s.stopping.exchange(true)) return;
  if (!s.started) {
    for (auto& l : s.loops) l->stop();
    return;
  }
  for (auto& ctx : s.contexts) {
    loop_context* c = ctx.get();
    c->loop->post([c] { c->begin_drain(); });
  }
}

}  // namespace weir::http

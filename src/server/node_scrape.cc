// GET /metrics and the access log's flush timers: the node's side of node_metrics (node.h).
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "base/prometheus_text.h"
#include "http/server.h"
#include "io/event_loop.h"
#include "replica/cold_mover.h"
#include "server/access_log.h"
#include "server/node.h"
#include "server/node_metrics.h"
#include "server/replication.h"
#include "server/reply.h"
#include "server/stream_shard.h"
#include "server/subscription_host.h"
#include "tier/cold_fetcher.h"
#include "tier/s3_object_store.h"

namespace weir::server {

namespace {
// The state of one scrape: every core fills its own slot, the last one to finish hands the whole to
// the connection's core.
struct scrape {
  node_figures figures;
  std::atomic<unsigned> left{0};
  std::mutex mu;  // the cluster figures, which every lane adds to
  http::exchange ex;
};
}  // namespace

void node::serve_metrics(http::exchange ex) {
  auto s = std::make_shared<scrape>();
  s->ex = ex;
  s->figures.shards.resize(shards_.size());
  s->left.store(static_cast<unsigned>(shards_.size()) + (subs_ ? 1 : 0), std::memory_order_relaxed);
  auto finish = [this, s] {
    if (s->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // The last core: the figures are complete; render and answer on the connection's core.
    s->ex.loop()->post([this, s] {
      s->figures.http = http_->stats();
      for (unsigned i = 0; i < http_->threads(); ++i) {  // every core's, with shards or not
        s->figures.slow_turns += http_->loop(i).slow_turns();
        s->figures.longest_turn_ms = std::max(s->figures.longest_turn_ms, http_->loop(i).longest_turn_ms());
        s->figures.loop_lag_us.merge(http_->loop(i).lag_us().read());
      }
      s->figures.process = read_process_figures();
      if (cold_s3_metrics_ != nullptr) {
        s->figures.cold = true;
        const tier::s3_store_metrics& m = *cold_s3_metrics_;
        s->figures.put_us = m.put_latency_us.read();
        s->figures.get_us = m.get_latency_us.read();
        s->figures.store_requests = m.requests.get();
        s->figures.store_failures = m.failures.get();
        if (cold_fetcher_) s->figures.fetch = cold_fetcher_->stats();
      }
      protocol::response r;
      r.status = 200;
      r.add_static("Content-Type", metrics::text_content_type);
      r.add_static("Cache-Control", "no-store");
      r.body = metrics_->render(s->figures);
      send_response(s->ex, std::move(r));
    });
  };
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    stream_shard* sh = shards_[i].get();
    sh->loop().post([sh, s, i, finish] {
      shard_figures& f = s->figures.shards[i];
      f.streams = sh->part().machine().size();
      f.producers = sh->part().machine().producer_count();
      f.hot_bytes = sh->part().hot().bytes();
      f.hot_budget = sh->part().hot().budget();
      f.hot_evicted = sh->part().hot().evicted();
      f.commands_in_flight = sh->part().wal().in_flight();
      f.bytes_in_flight = sh->part().wal().in_flight_bytes();
      f.cold_reads = sh->part().cold_reads_done();
      f.cold_reads_pending = sh->part().cold_reads_pending();
      f.cold_read_us = sh->part().cold_read_latency().read();
      if (const replica::cold_mover* m = sh->part().mover()) {
        f.tiered = true;
        f.tier = m->stats();
        const replica::cold_mover::upload_view up = m->uploads();
        f.upload_waiting = up.bytes_waiting;
        f.upload_failures = up.attempts_failed;
        f.sweep = m->sweep_stats();
      }
      if (const replica::cold_snapshots* sn = sh->part().snapshots()) f.snapshots = sn->stats();
      f.bucket_reads = sh->part().bucket_reads();
      f.bucket_read_failures = sh->part().bucket_read_failures();
      if (storage::log_writer* w = sh->part().wal().writer()) {
        f.durable = true;
        f.log = w->stats();
      }
      if (replication* r = sh->replicated()) {  // a cluster node: each lane's on its shard's loop
        std::lock_guard lock(s->mu);
        s->figures.cluster = true;
        s->figures.leadership += r->leadership();
      }
      finish();
    });
  }
  if (subs_) {
    http_->loop(0).post([this, s, finish] {  // the subscription service's core
      const subscriptions_glue::figures g = subs_->stats();
      s->figures.subscriptions = true;
      s->figures.subscription_count = g.subscriptions;
      s->figures.deliveries_ok = g.deliveries_ok;
      s->figures.deliveries_failed = g.deliveries_failed;
      finish();
    });
  }
}

void node::arm_access_log_flush(unsigned core) {
  if (stopping_.load(std::memory_order_relaxed)) return;
  flush_timers_[core] = http_->loop(core).add_timer(std::chrono::seconds(1), [this, core] {
    flush_timers_[core] = 0;
    access_log_->flush(core);
    arm_access_log_flush(core);
  });
}

}  // namespace weir::server

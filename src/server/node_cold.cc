// The cold tier of a single node (docs/cold-tier.md): the bucket is reached once at start (a node that
// cannot list it does not start: a wrong name, endpoint or credential shows at once, not after an hour of
// appends), then every shard gets a cold_mover whose uploads run on the tier's worker threads.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <memory>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/log.h"
#include "replica/cluster_cold_snapshots.h"
#include "replica/cold_mover.h"
#include "replica/cold_restore.h"
#include "replica/cold_snapshots.h"
#include "server/node.h"
#include "server/replication.h"
#include "server/reply.h"
#include "server/stream_shard.h"
#include "tier/cold_fetcher.h"
#include "tier/cold_location.h"
#include "tier/object_key.h"
#include "tier/object_store_retry.h"
#include "tier/object_store_workers.h"
#include "tier/s3_object_store.h"

namespace weir::server {

namespace {

// "2026-01-31T12:00:00.123Z" for a wall-clock time in milliseconds.
std::string format_utc_ms(std::int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf, n) + fmt::format(".{:03}Z", ms % 1000);
}

error cold_error(const std::string& why) {
  return make_error(storage::errc::io_error, "cold: " + why);
}

// Settings first, then the environment (as the AWS tools do).
tier::s3_credentials cold_credentials(const serve_config& c) {
  tier::s3_credentials env = tier::credentials_from_environment();
  tier::s3_credentials out;
  out.access_key_id = c.s3_access_key_id.empty() ? env.access_key_id : c.s3_access_key_id;
  out.secret_access_key = c.s3_secret_access_key.empty() ? env.secret_access_key : c.s3_secret_access_key;
  out.session_token = c.s3_session_token.empty() ? env.session_token : c.s3_session_token;
  return out;
}

}  // namespace

status node::connect_cold() {
  if (cfg_.cold.empty()) {
    if (cfg_.restore) return cold_error("restore needs cold (the bucket to restore from)");
    return {};
  }
  if (!cfg_.durable) return cold_error("needs durable true (only data on disk moves to the bucket)");
  tier::s3_settings s;
  auto location = tier::parse_cold_location(cfg_.cold);
  if (!location) return cold_error(location.err().reason);
  s.location = std::move(*location);
  s.region = cfg_.s3_region;
  if (!cfg_.s3_endpoint.empty()) {
    auto endpoint = tier::parse_s3_endpoint(cfg_.s3_endpoint);
    if (!endpoint) return cold_error(endpoint.err().reason);
    s.endpoint = std::move(*endpoint);
  }
  s.credentials = cold_credentials(cfg_);
  if (s.credentials.empty()) {
    return cold_error(
        "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or s3-access-key-id and "
        "s3-secret-access-key in the settings file");
  }
  const std::string described = tier::describe(s);
  auto s3 = std::make_unique<tier::s3_object_store>(std::move(s));
  cold_s3_metrics_ = &s3->metrics();
  cold_s3_ = std::move(s3);
  cold_store_ = std::make_unique<tier::retrying_object_store>(*cold_s3_, tier::retry_policy{},
                                                              static_cast<std::uint64_t>(std::rand()));
  // One listing, with the store's retries: the bucket exists, answers, and takes these credentials.
  if (auto page = cold_store_->list(tier::epoch_key_prefix(tier::cold_epoch{1}), "", 1); !page) {
    return cold_error(described + " cannot be listed: " + page.err().describe());
  }
  cold_described_ = described;
  if (cfg_.restore) return restore_from_bucket();
  return {};
}

status node::restore_from_bucket() {
  const auto began = std::chrono::steady_clock::now();
  auto point = replica::find_restore_point(*cold_store_);
  if (!point) return cold_error(point.err().reason);
  std::uint64_t bytes = 0;
  for (const auto& g : point->groups) {
    bytes += g.object.size();
    log::info("weir serve: restore: group {} from {} (log position {}, taken {}), {} bytes",
              g.header.group.value(), g.key, g.header.lsn, format_utc_ms(g.header.taken_at_ms),
              g.object.size());
  }
  if (cfg_.cluster.enabled()) {
    // Every node of the new cluster writes the same raft snapshots from the same objects.
    if (point->groups.size() != cfg_.cluster.groups) {
      return cold_error("the bucket's snapshots are of " + std::to_string(point->groups.size()) +
                        " groups, this cluster has " + std::to_string(cfg_.cluster.groups));
    }
    std::map<std::uint64_t, std::string> members;
    for (const auto& [id, addr] : cfg_.cluster.peers)
      members.emplace(id, addr.host + ":" + std::to_string(addr.port));
    if (auto st = replica::write_restored_cluster(*env_, cfg_.data_dir, *point, cfg_.cluster.lanes, members);
        !st)
      return cold_error(st.err().reason);
  } else if (auto st = replica::write_restored_logs(*env_, cfg_.data_dir, *point); !st) {
    return cold_error(st.err().reason);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  log::info(
      "weir serve: restored {} groups from {} epoch {} to the point in time {} ({} snapshot bytes in {:.2f} "
      "s); "
      "this node uploads under epoch {}",
      point->groups.size(), cold_described_, point->epoch.value(), format_utc_ms(point->taken_at_ms()), bytes,
      secs, point->next_epoch.value());
  return {};
}

status node::open_cold() {
  if (!cold_store_) return {};
  auto epoch_read = replica::read_cold_epoch(*env_, cfg_.data_dir);
  if (!epoch_read) return cold_error(epoch_read.err().reason);
  const tier::cold_epoch epoch = *epoch_read;
  const std::string described = cold_described_;
  // The partitions that share local-bytes: a single node's shards, or a cluster node's lanes (its other
  // cores only parse HTTP).
  const bool cluster = cfg_.cluster.enabled();
  const std::uint64_t parts = cluster ? cfg_.cluster.lanes : shards_.size();
  // A partition's log has its active segment, the one prepared after it and a partly forgotten oldest one
  // on disk beyond the records it holds (a cluster lane's node log, or its data log, whichever has the
  // larger segments).
  const std::uint64_t segment =
      cluster ? std::max(cfg_.segment_bytes, cfg_.cluster.log_segment_bytes) : cfg_.segment_bytes;
  // A cluster lane's node log also holds every entry of its groups since their last raft snapshot (up to
  // raft-snapshot-bytes each, and a quarter of that kept after a snapshot for followers a little behind):
  // its share keeps room for them beside the records it holds, so that the whole of the node's stream
  // data stays within local-bytes. Those entries are mostly the newest held records themselves (a record
  // points into the node log), so the room errs on the side of the disk.
  const std::uint64_t groups_per_lane =
      cluster ? (cfg_.cluster.groups + cfg_.cluster.lanes - 1) / cfg_.cluster.lanes : 0;
  const std::uint64_t raft_room =
      groups_per_lane * (cfg_.cluster.snapshot_bytes + cfg_.cluster.snapshot_bytes / 4);
  const std::uint64_t overhead = 3 * segment + raft_room;
  // Each share holds that beside two objects being filled and sent (what the tier needs to make progress).
  const std::uint64_t smallest = parts * (overhead + 2 * cfg_.cold_object_bytes);
  if (cfg_.local_bytes > 0 && cfg_.local_bytes < smallest) {
    return cold_error(
        "local-bytes " + std::to_string(cfg_.local_bytes) + " is too small for " + std::to_string(parts) +
        (cluster ? " lanes" : " shards") + ": at least " + std::to_string(smallest) + " (per " +
        (cluster ? "lane three raft-segment-bytes, room for " + std::to_string(groups_per_lane) +
                       " groups' raft logs of 1.25 raft-snapshot-bytes each"
                 : "shard three segment-bytes") +
        " and two cold-object-bytes)");
  }
  cold_workers_ = std::make_unique<tier::object_store_workers>(*cold_store_, 2);
  cold_fetcher_ = std::make_unique<tier::cold_fetcher>(*cold_store_);
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    stream_shard& shard = *shards_[i];
    replica::cold_mover_options o;
    o.upload.epoch = epoch;
    replication* lane = shard.replicated();
    if (cfg_.cluster.enabled() && lane == nullptr) continue;  // a core that only parses HTTP
    std::uint64_t run_term = 0;
    if (lane != nullptr) {
      // A cluster node: each raft group's leader uploads the group's streams under its raft term.
      o.groups = &lane->core();
    } else {
      const std::string dir =
          storage::join_path(storage::join_path(cfg_.data_dir, "wal"), "core-" + std::to_string(i));
      auto term = replica::next_cold_term(*env_, dir);
      if (!term) return cold_error(dir + ": " + term.err().reason);
      run_term = *term;
      o.upload.group = tier::cold_group(static_cast<std::uint32_t>(i));
      o.upload.term = tier::leader_term(run_term);
    }
    o.upload.target_object_bytes = cfg_.cold_object_bytes;
    o.upload.max_age = std::chrono::milliseconds(cfg_.cold_max_age_ms);
    // A turn of the mover stops after turn_time, so that reading many streams never holds the loop long.
    o.clock_us = mono_now_us;
    tier::object_store_workers* workers = cold_workers_.get();
    io::event_loop* loop = &shard.loop();
    const tier::uploader::put_fn put = [workers, loop](std::string key, tier::shared_object_bytes bytes,
                                                       tier::uploader::put_done done) {
      workers->put(std::move(key), std::move(bytes), {}, std::move(done), loop);
    };
    // A partition holds (and takes appends for) at most its share less the overhead above, so that the
    // node's disk stays within local-bytes.
    const std::uint64_t share = cfg_.local_bytes / parts;
    const std::uint64_t held = share > overhead ? share - overhead : 0;
    o.keep_bytes = cfg_.cold_keep_bytes > 0 ? std::max<std::uint64_t>(1, cfg_.cold_keep_bytes / parts) : held;
    shard.part().attach_object_reads([fetcher = cold_fetcher_.get(), workers, loop](
                                         std::string key, std::uint64_t size, std::uint64_t position,
                                         std::uint64_t length, replica::partition::object_done done) {
      workers->run_job<tier::store_result<tier::object_bytes>>(
          [fetcher, key = std::move(key), size, position, length] {
            return fetcher->read(key, size, position, length);
          },
          std::move(done), loop);
    });
    shard.part().attach_record_lookups([fetcher = cold_fetcher_.get(), workers, loop](
                                           std::string key, std::uint64_t size, std::string stream,
                                           streams::stream_offset at, replica::partition::record_done done) {
      workers->run_job<tier::store_result<std::optional<tier::object_record>>>(
          [fetcher, key = std::move(key), size, stream = std::move(stream), at] {
            return fetcher->record_at(key, size, stream, at);
          },
          std::move(done), loop);
    });
    // A fork's inherited bytes in objects, its source on another shard: that shard's index knows where
    // they are (asked on its loop, a lookup in memory); the object is then read as above, off the loops.
    shard.part().attach_foreign_objects([this, loop](std::string stream, streams::stream_offset from,
                                                     replica::partition::located_fn done) {
      stream_shard& owner = owner_of(stream);
      owner.loop().post([&owner, loop, stream = std::move(stream), from, done = std::move(done)]() mutable {
        auto where = owner.part().locate_objects(stream, from);
        loop->post([done = std::move(done), where = std::move(where)]() mutable { done(std::move(where)); });
      });
    });
    // Objects nothing names any more go after cold-gc-grace-ms; the bucket is listed every half of it,
    // at most once a second (each listing is a paid request per page). On a cluster node each group's
    // leader sweeps its group.
    o.sweep.grace = std::chrono::milliseconds(cfg_.cold_gc_grace_ms);
    o.sweep.interval = std::max<std::chrono::milliseconds>(std::chrono::seconds(1), o.sweep.grace / 2);
    o.sweep.list = [workers, loop](std::string prefix, std::string token, int max_keys,
                                   replica::cold_sweeper_options::list_done done) {
      workers->list(std::move(prefix), std::move(token), max_keys, std::move(done), loop);
    };
    o.sweep.remove = [workers, loop](std::string key, replica::cold_sweeper_options::remove_done done) {
      workers->remove(std::move(key), std::move(done), loop);
    };
    // Restore snapshots go through the same workers and calls.
    replica::cold_snapshot_io io;
    io.off_loop = [workers, loop](std::function<replica::cold_snapshot_io::built()> job,
                                  std::function<void(replica::cold_snapshot_io::built)> done) {
      workers->run_job(std::move(job), std::move(done), loop);
    };
    io.put = put;
    io.list = o.sweep.list;
    io.remove = o.sweep.remove;
    if (lane != nullptr) {
      // Each group's leader uploads the group's restore snapshots; a kept one may name an object the live
      // index dropped: it stays.
      o.sweep.in_snapshot = [part = &shard.part()](std::string_view key) {
        const replica::cluster_cold_snapshots* sn = part->cluster_snapshots();
        auto name = tier::parse_object_key(key);
        return sn == nullptr || !name || sn->names(name->group.value(), key);
      };
      shard.part().attach_cold(o, put, held);
      replica::cluster_cold_snapshot_options so;
      so.epoch = epoch;
      so.groups = cfg_.cluster.groups;
      so.interval = std::chrono::milliseconds(cfg_.cold_snapshot_interval_ms);
      shard.part().attach_cluster_snapshots(
          std::make_unique<replica::cluster_cold_snapshots>(lane->core(), so, std::move(io)));
      continue;
    }
    // A kept restore snapshot may name an object the live index dropped: it stays.
    o.sweep.in_snapshot = [part = &shard.part()](std::string_view key) {
      return part->snapshots() == nullptr || part->snapshots()->names(key);
    };
    shard.part().attach_cold(o, put, held);
    replica::cold_snapshot_options so;
    so.epoch = epoch;
    so.group = tier::cold_group(static_cast<std::uint32_t>(i));
    so.groups = static_cast<std::uint32_t>(shards_.size());
    so.term = tier::leader_term(run_term);
    so.interval = std::chrono::milliseconds(cfg_.cold_snapshot_interval_ms);
    shard.part().attach_cold_snapshots(so, std::move(io));
  }
  log::info("weir serve: cold tier {}: {} shards upload objects of about {} MiB (or after {} ms){}",
            described, shards_.size(), cfg_.cold_object_bytes >> 20, cfg_.cold_max_age_ms,
            cfg_.local_bytes > 0 ? ", local budget " + std::to_string(cfg_.local_bytes >> 20) + " MiB" : "");
  return {};
}

void node::cold_health(http::exchange ex) {
  struct view {
    std::uint64_t waiting = 0;   // bytes packed for the bucket, not in it yet
    std::uint64_t local = 0;     // bytes in no object yet
    bool refusing = false;       // a shard refuses appends (its budget of bytes not in the bucket is full)
    std::string upload_error;    // a shard's last failed upload
    std::string snapshot_error;  // a shard's last failed restore snapshot
  };
  auto v = std::make_shared<view>();
  gather_shards(
      [v](stream_shard& shard) {
        if (const replica::cold_mover* m = shard.part().mover()) {
          const replica::cold_mover::upload_view up = m->uploads();
          v->waiting += up.bytes_waiting;
          v->local += m->local_bytes();
          if (!up.last_error.empty()) v->upload_error = up.last_error;
        }
        v->refusing = v->refusing || shard.part().local_budget_full();
        if (const replica::cold_snapshots* sn = shard.part().snapshots();
            sn && !sn->stats().last_error.empty())
          v->snapshot_error = sn->stats().last_error;
      },
      [v, ex, bucket = cold_described_] {
        // The node serves reads (and writes until the budget): 200, with what is wrong in the body.
        protocol::response r;
        r.status = 200;
        r.add_static("Content-Type", "text/plain");
        r.add_static("Cache-Control", "no-store");
        r.body = v->upload_error.empty() && !v->refusing && v->snapshot_error.empty() ? "ok\n" : "degraded\n";
        r.body += fmt::format("cold tier {}: {} bytes not in the bucket, {} packed and waiting\n", bucket,
                              v->local, v->waiting);
        if (!v->upload_error.empty()) r.body += "uploads failing: " + v->upload_error + "\n";
        if (v->refusing) r.body += "appends refused: the budget of bytes not yet in the bucket is full\n";
        if (!v->snapshot_error.empty()) r.body += "restore snapshots failing: " + v->snapshot_error + "\n";
        send_response(ex, std::move(r));
      });
}

}  // namespace weir::server

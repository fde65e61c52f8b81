// The cold tier of a single node (docs/cold-tier.md): the bucket is reached once at start (a node that
// cannot list it does not start: a wrong name, endpoint or credential shows at once, not after an hour of
// appends), then every shard gets a cold_mover whose uploads run on the tier's worker threads.
#include <algorithm>
#include <cstdlib>

#include "base/log.h"
#include "replica/cold_mover.h"
#include "server/node.h"
#include "server/stream_shard.h"
#include "tier/cold_fetcher.h"
#include "tier/cold_location.h"
#include "tier/object_key.h"
#include "tier/object_store_retry.h"
#include "tier/object_store_workers.h"
#include "tier/s3_object_store.h"

namespace weir::server {

namespace {

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

status node::open_cold() {
  if (cfg_.cold.empty()) return {};
  if (cfg_.cluster.enabled()) {
    return cold_error(
        "a cluster node does not move data to a bucket yet (docs/cold-tier.md, \"Status\"); "
        "run without cold");
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
  cold_s3_ = std::make_unique<tier::s3_object_store>(std::move(s));
  cold_store_ = std::make_unique<tier::retrying_object_store>(*cold_s3_, tier::retry_policy{},
                                                              static_cast<std::uint64_t>(std::rand()));
  // One listing, with the store's retries: the bucket exists, answers, and takes these credentials.
  const tier::cold_epoch epoch{1};
  if (auto page = cold_store_->list(tier::epoch_key_prefix(epoch), "", 1); !page) {
    return cold_error(described + " cannot be listed: " + page.err().describe());
  }
  cold_workers_ = std::make_unique<tier::object_store_workers>(*cold_store_, 2);
  cold_fetcher_ = std::make_unique<tier::cold_fetcher>(*cold_store_);
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    stream_shard& shard = *shards_[i];
    const std::string dir =
        storage::join_path(storage::join_path(cfg_.data_dir, "wal"), "core-" + std::to_string(i));
    auto term = replica::next_cold_term(*env_, dir);
    if (!term) return cold_error(dir + ": " + term.err().reason);
    replica::cold_mover_options o;
    o.upload.epoch = epoch;
    o.upload.group = tier::cold_group(static_cast<std::uint32_t>(i));
    o.upload.term = tier::leader_term(*term);
    o.upload.target_object_bytes = cfg_.cold_object_bytes;
    o.upload.max_age = std::chrono::milliseconds(cfg_.cold_max_age_ms);
    tier::object_store_workers* workers = cold_workers_.get();
    io::event_loop* loop = &shard.loop();
    auto put = [workers, loop](std::string key, tier::object_bytes bytes, tier::uploader::put_done done) {
      workers->put(std::move(key), std::move(bytes), {}, std::move(done), loop);
    };
    const std::uint64_t share = cfg_.local_bytes / shards_.size();
    // Keep the disk under its share: forget what is in objects once the held bytes pass three quarters
    // of it (or cold-keep-bytes), so that appends keep room while uploads catch up.
    o.keep_bytes = cfg_.cold_keep_bytes > 0
                       ? std::max<std::uint64_t>(1, cfg_.cold_keep_bytes / shards_.size())
                       : share / 4 * 3;
    // Objects nothing names any more go after cold-gc-grace-ms; the bucket is listed every half of it,
    // at most once a second (each listing is a paid request per page).
    o.sweep.grace = std::chrono::milliseconds(cfg_.cold_gc_grace_ms);
    o.sweep.interval = std::max<std::chrono::milliseconds>(std::chrono::seconds(1), o.sweep.grace / 2);
    o.sweep.list = [workers, loop](std::string prefix, std::string token, int max_keys,
                                   replica::cold_sweeper_options::list_done done) {
      workers->list(std::move(prefix), std::move(token), max_keys, std::move(done), loop);
    };
    o.sweep.remove = [workers, loop](std::string key, replica::cold_sweeper_options::remove_done done) {
      workers->remove(std::move(key), std::move(done), loop);
    };
    shard.part().attach_cold(o, std::move(put), share);
    shard.part().attach_object_reads([fetcher = cold_fetcher_.get(), workers = cold_workers_.get(), loop](
                                         std::string key, std::uint64_t size, std::uint64_t position,
                                         std::uint64_t length, replica::partition::object_done done) {
      workers->run_job(
          [fetcher, loop, key = std::move(key), size, position, length, done = std::move(done)]() mutable {
            auto got = fetcher->read(key, size, position, length);
            loop->post([done = std::move(done), got = std::move(got)]() mutable { done(std::move(got)); });
          });
    });
  }
  log::info("weir serve: cold tier {}: {} shards upload objects of about {} MiB (or after {} ms){}",
            described, shards_.size(), cfg_.cold_object_bytes >> 20, cfg_.cold_max_age_ms,
            cfg_.local_bytes > 0 ? ", local budget " + std::to_string(cfg_.local_bytes >> 20) + " MiB" : "");
  return {};
}

}  // namespace weir::server

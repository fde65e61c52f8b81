#include "server/node_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/prometheus_text.h"
#include "server/access_log.h"

namespace weir::server {

using metrics::label;
using metrics::metric_type;

std::string_view kind_name(request_kind k) {
  switch (k) {
    case request_kind::other:
      return "other";
    case request_kind::create:
      return "create";
    case request_kind::fork:
      return "fork";
    case request_kind::append:
      return "append";
    case request_kind::close:
      return "close";
    case request_kind::read:
      return "read";
    case request_kind::head:
      return "head";
    case request_kind::remove:
      return "delete";
    case request_kind::long_poll:
      return "long_poll";
    case request_kind::sse:
      return "sse";
    case request_kind::preflight:
      return "preflight";
    case request_kind::healthz:
      return "healthz";
    case request_kind::metrics:
      return "metrics";
    case request_kind::subscriptions:
      return "subscriptions";
    case request_kind::count_:
      break;
  }
  return "other";
}

request_kind kind_of(const protocol::stream_request& r) {
  using protocol::operation;
  switch (r.op) {
    case operation::create:
      return r.fork ? request_kind::fork : request_kind::create;
    case operation::append:
      return r.closed ? request_kind::close : request_kind::append;
    case operation::read:
      return r.live == protocol::live_mode::sse         ? request_kind::sse
             : r.live == protocol::live_mode::long_poll ? request_kind::long_poll
                                                        : request_kind::read;
    case operation::head:
      return request_kind::head;
    case operation::remove:
      return request_kind::remove;
    case operation::preflight:
      return request_kind::preflight;
  }
  return request_kind::other;
}

request_kind kind_of(http::method m) {
  switch (m) {
    case http::method::get:
      return request_kind::read;
    case http::method::head:
      return request_kind::head;
    case http::method::put:
      return request_kind::create;
    case http::method::post:
      return request_kind::append;
    case http::method::del:
      return request_kind::remove;
    case http::method::options:
      return request_kind::preflight;
    default:
      return request_kind::other;
  }
}

process_figures read_process_figures() {
  process_figures p;
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  // proc(5): the fields after the command name, which is in parentheses and may hold spaces.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return p;
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields),
                             std::istream_iterator<std::string>()};
  // f[0] is field 3 (state): field N is f[N - 3].
  if (f.size() < 22) return p;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  p.cpu_seconds = (std::stod(f[14 - 3]) + std::stod(f[15 - 3])) / ticks;
  const double start_ticks = std::stod(f[22 - 3]);
  p.virtual_bytes = std::stoull(f[23 - 3]);
  p.resident_bytes = static_cast<std::uint64_t>(std::stod(f[24 - 3]) * page);
  std::ifstream boot("/proc/stat");
  for (std::string line; std::getline(boot, line);) {
    if (line.rfind("btime ", 0) == 0) p.start_time_seconds = std::stod(line.substr(6)) + start_ticks / ticks;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++p.open_fds;
  }
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) p.max_fds = lim.rlim_cur;
  p.known = true;
  return p;
}

node_metrics::per_core::per_core() {
  for (std::size_t i = 0; i < request_kinds; ++i) latency.emplace_back(metrics::latency_us_bounds);
}

node_metrics::node_metrics(bool count) : count_(count), log_(nullptr) {}

void node_metrics::set_cores(unsigned cores) {
  cores_.clear();
  if (!count_) return;
  for (unsigned i = 0; i < cores; ++i) cores_.push_back(std::make_unique<per_core>());
}

node_metrics::~node_metrics() = default;

void node_metrics::set_access_log(access_log* log) {
  log_ = log;
  wants_request_line = log_ != nullptr;
}

namespace {
int live_slot(request_kind k) {
  return k == request_kind::long_poll ? 0 : k == request_kind::sse ? 1 : -1;
}
}  // namespace

void node_metrics::live_started(unsigned core, request_kind k) {
  if (!count_) return;
  if (int s = live_slot(k); s >= 0) cores_[core]->live_started[static_cast<std::size_t>(s)].add();
}

void node_metrics::finished(unsigned core, const http::exchange_record& r) {
  if (count_) {
    per_core& c = *cores_[core];
    const std::size_t k = r.tag < request_kinds ? r.tag : 0;
    const std::size_t slot = r.status >= 100 && r.status <= 599 ? static_cast<std::size_t>(r.status - 99) : 0;
    c.requests[k][slot].add();
    c.bytes_in[k].add(r.bytes_in);
    c.bytes_out[k].add(r.bytes_out);
    c.latency[k].observe(r.head_ns / 1000);
    if (int s = live_slot(static_cast<request_kind>(k)); s >= 0) {
      c.live_ended[static_cast<std::size_t>(s)].add();
    }
  }
  if (log_ != nullptr) log_->write(core, r);
}

std::string node_metrics::render(const node_figures& f) const {
  metrics::prometheus_text t;
  if (count_) {
    // Sum the cores first: every family's samples must be written together.
    std::vector<std::array<std::uint64_t, status_slots>> requests(request_kinds);
    std::array<std::uint64_t, request_kinds> in{}, out{};
    std::vector<metrics::histogram_counts> latency(request_kinds);
    std::array<std::uint64_t, 2> live{};
    for (auto& row : requests) row.fill(0);
    for (const auto& c : cores_) {
      for (std::size_t k = 0; k < request_kinds; ++k) {
        for (std::size_t s = 0; s < status_slots; ++s) requests[k][s] += c->requests[k][s].get();
        in[k] += c->bytes_in[k].get();
        out[k] += c->bytes_out[k].get();
        latency[k].merge(c->latency[k].read());
      }
      for (std::size_t i = 0; i < 2; ++i) {
        // A request ends on the core where it started. Ends are read before starts: a request that
        // starts and ends between the two reads then counts in neither, never in `ended` alone.
        const std::uint64_t ended = c->live_ended[i].get();
        live[i] += c->live_started[i].get() - ended;
      }
    }
    t.family("weir_http_requests_total", metric_type::counter,
             "Requests answered, by operation and status (code 0: the client left before any response).");
    char code[4] = {};
    for (std::size_t k = 0; k < request_kinds; ++k) {
      const std::string_view op = kind_name(static_cast<request_kind>(k));
      for (std::size_t s = 0; s < status_slots; ++s) {
        if (requests[k][s] == 0) continue;
        std::string_view code_text = "0";
        if (s != 0) {
          const std::size_t st = s + 99;
          code[0] = static_cast<char>('0' + st / 100);
          code[1] = static_cast<char>('0' + st / 10 % 10);
          code[2] = static_cast<char>('0' + st % 10);
          code_text = std::string_view(code, 3);
        }
        t.sample("weir_http_requests_total", {{"op", op}, {"code", code_text}}, requests[k][s]);
      }
    }
    t.family("weir_http_request_errors_total", metric_type::counter,
             "Requests answered with a 4xx or 5xx status, by operation and status class.");
    for (std::size_t k = 0; k < request_kinds; ++k) {
      const std::string_view op = kind_name(static_cast<request_kind>(k));
      std::uint64_t c4 = 0, c5 = 0;
      for (std::size_t s = 400 - 99; s < 500 - 99; ++s) c4 += requests[k][s];
      for (std::size_t s = 500 - 99; s < status_slots; ++s) c5 += requests[k][s];
      if (c4 != 0) t.sample("weir_http_request_errors_total", {{"op", op}, {"class", "4xx"}}, c4);
      if (c5 != 0) t.sample("weir_http_request_errors_total", {{"op", op}, {"class", "5xx"}}, c5);
    }
    t.family("weir_http_request_duration_seconds", metric_type::histogram,
             "Time from the read that completed a request to its response head, by operation (long-poll: "
             "the wait; SSE: until the stream began).");
    for (std::size_t k = 0; k < request_kinds; ++k) {
      if (latency[k].count() == 0) continue;
      const label op[] = {{"op", kind_name(static_cast<request_kind>(k))}};
      t.histogram("weir_http_request_duration_seconds", op, metrics::latency_us_bounds, latency[k],
                  1'000'000);
    }
    t.family("weir_http_request_bytes_total", metric_type::counter,
             "Request bytes received (head and body), by operation.");
    for (std::size_t k = 0; k < request_kinds; ++k) {
      if (in[k] != 0)
        t.sample("weir_http_request_bytes_total", {{"op", kind_name(static_cast<request_kind>(k))}}, in[k]);
    }
    t.family("weir_http_response_bytes_total", metric_type::counter,
             "Response bytes queued for sending (head, body, chunk framing), by operation.");
    for (std::size_t k = 0; k < request_kinds; ++k) {
      if (out[k] != 0) {
        t.sample("weir_http_response_bytes_total", {{"op", kind_name(static_cast<request_kind>(k))}}, out[k]);
      }
    }
    t.family("weir_live_readers", metric_type::gauge, "Long-poll and SSE requests in progress.");
    t.sample("weir_live_readers", {{"kind", "long_poll"}}, live[0]);
    t.sample("weir_live_readers", {{"kind", "sse"}}, live[1]);
  }

  if (f.process.known) {
    const process_figures& p = f.process;
    t.family("process_cpu_seconds_total", metric_type::counter, "User and system CPU time of the process.");
    t.sample_double("process_cpu_seconds_total", {}, p.cpu_seconds);
    t.family("process_resident_memory_bytes", metric_type::gauge, "Resident memory of the process.");
    t.sample("process_resident_memory_bytes", {}, p.resident_bytes);
    t.family("process_virtual_memory_bytes", metric_type::gauge, "Virtual memory of the process.");
    t.sample("process_virtual_memory_bytes", {}, p.virtual_bytes);
    t.family("process_open_fds", metric_type::gauge, "Open file descriptors (connections, log files...).");
    t.sample("process_open_fds", {}, p.open_fds);
    t.family("process_max_fds", metric_type::gauge, "The descriptor limit (RLIMIT_NOFILE).");
    t.sample("process_max_fds", {}, p.max_fds);
    t.family("process_start_time_seconds", metric_type::gauge, "Start time of the process, Unix seconds.");
    t.sample_double("process_start_time_seconds", {}, p.start_time_seconds);
  }

  const http::server_stats& h = f.http;
  t.family("weir_http_connections_open", metric_type::gauge, "Open HTTP connections.");
  t.sample("weir_http_connections_open", {}, h.open_connections);
  t.family("weir_http_connections_accepted_total", metric_type::counter, "HTTP connections accepted.");
  t.sample("weir_http_connections_accepted_total", {}, h.accepted);
  t.family("weir_http_connections_rejected_total", metric_type::counter,
           "HTTP connections refused over a connection cap or for want of a descriptor.");
  t.sample("weir_http_connections_rejected_total", {}, h.rejected);
  t.family("weir_http_bodies_refused_total", metric_type::counter,
           "Requests refused (503) because their body did not fit in the body budget.");
  t.sample("weir_http_bodies_refused_total", {}, h.bodies_refused);
  t.family("weir_http_body_bytes_reserved", metric_type::gauge, "Body budget held by bodies being received.");
  t.sample("weir_http_body_bytes_reserved", {}, h.body_bytes_reserved);
  t.family("weir_http_streams_dropped_total", metric_type::counter,
           "Streamed responses (SSE) closed because their client did not read.");
  t.sample("weir_http_streams_dropped_total", {}, h.streams_dropped);
  t.family("weir_http_reads_deferred_total", metric_type::counter,
           "Connection reads put off to a later event-loop turn: the turn's read budget was spent.");
  t.sample("weir_http_reads_deferred_total", {}, h.reads_deferred);
  t.family("weir_http2_connections_total", metric_type::counter,
           "Connections that spoke HTTP/2 (h2c or h2).");
  t.sample("weir_http2_connections_total", {}, h.h2_connections);
  t.family("weir_http2_streams_total", metric_type::counter, "HTTP/2 streams (requests) opened by clients.");
  t.sample("weir_http2_streams_total", {}, h.h2_streams);

  shard_figures sum;
  metrics::histogram_counts fsync, batch_records, batch_bytes, cold_read;
  std::int64_t restore_point_ms = -1;
  for (const shard_figures& s : f.shards) {
    sum.cold_reads += s.cold_reads;
    sum.tiered = sum.tiered || s.tiered;
    sum.tier.objects += s.tier.objects;
    sum.tier.bytes += s.tier.bytes;
    sum.tier.local_bytes += s.tier.local_bytes;
    sum.tier.held_bytes += s.tier.held_bytes;
    sum.tier.forgotten_bytes += s.tier.forgotten_bytes;
    sum.tier.read_failures += s.tier.read_failures;
    sum.upload_waiting += s.upload_waiting;
    sum.upload_failures += s.upload_failures;
    sum.sweep.objects_deleted += s.sweep.objects_deleted;
    sum.sweep.bytes_deleted += s.sweep.bytes_deleted;
    sum.sweep.delete_failures += s.sweep.delete_failures;
    sum.sweep.list_failures += s.sweep.list_failures;
    sum.sweep.candidates += s.sweep.candidates;
    sum.snapshots.uploaded += s.snapshots.uploaded;
    sum.snapshots.failed += s.snapshots.failed;
    sum.snapshots.too_large += s.snapshots.too_large;
    // The restore point is the oldest shard's last snapshot (0 while a shard has none).
    if (s.tiered) {
      restore_point_ms = restore_point_ms < 0 ? s.snapshots.last_taken_ms
                                              : std::min(restore_point_ms, s.snapshots.last_taken_ms);
    }
    sum.bucket_reads += s.bucket_reads;
    sum.bucket_read_failures += s.bucket_read_failures;
    sum.cold_reads_pending += s.cold_reads_pending;
    cold_read.merge(s.cold_read_us);
    sum.streams += s.streams;
    sum.producers += s.producers;
    sum.hot_bytes += s.hot_bytes;
    sum.hot_budget += s.hot_budget;
    sum.hot_evicted += s.hot_evicted;
    sum.commands_in_flight += s.commands_in_flight;
    sum.bytes_in_flight += s.bytes_in_flight;
    sum.durable = sum.durable || s.durable;
    sum.log.records += s.log.records;
    sum.log.batches += s.log.batches;
    sum.log.inline_batches += s.log.inline_batches;
    sum.log.prepared_segments += s.log.prepared_segments;
    sum.log.syncs += s.log.syncs;
    sum.log.failed_batches += s.log.failed_batches;
    sum.log.failed_periodic_syncs += s.log.failed_periodic_syncs;
    sum.log.segments += s.log.segments;
    sum.log.segment_bytes += s.log.segment_bytes;
    fsync.merge(s.log.sync_us);
    batch_records.merge(s.log.batch_records);
    batch_bytes.merge(s.log.batch_bytes);
  }
  t.family("weir_event_loop_slow_turns_total", metric_type::counter,
           "Event loop turns that took 250 ms or more (everything on that core waited meanwhile).");
  t.sample("weir_event_loop_slow_turns_total", {}, f.slow_turns);
  t.family("weir_event_loop_longest_turn_seconds", metric_type::gauge,
           "The longest event loop turn since the start, over the cores.");
  t.sample_double("weir_event_loop_longest_turn_seconds", {},
                  static_cast<double>(f.longest_turn_ms) / 1000.0);
  t.family("weir_event_loop_lag_seconds", metric_type::histogram,
           "How late each core's loop got round to a probe due every 25 ms (io::event_loop::lag_us), over "
           "the cores: a long turn delays every request on its core by up to this much.");
  t.histogram("weir_event_loop_lag_seconds", {}, metrics::latency_us_bounds, f.loop_lag_us, 1'000'000);
  t.family("weir_streams", metric_type::gauge,
           "Streams held (soft-deleted ones that forks still read included).");
  t.sample("weir_streams", {}, sum.streams);
  t.family("weir_producers", metric_type::gauge, "Idempotent producers whose state the streams keep.");
  t.sample("weir_producers", {}, sum.producers);
  t.family("weir_hot_bytes", metric_type::gauge, "Stream data held in memory (hot tier).");
  t.sample("weir_hot_bytes", {}, sum.hot_bytes);
  t.family("weir_hot_budget_bytes", metric_type::gauge, "The hot tier's memory budget (setting hot-bytes).");
  t.sample("weir_hot_budget_bytes", {}, sum.hot_budget);
  t.family("weir_hot_evicted_records_total", metric_type::counter,
           "Records whose bytes left memory for the log's segment files only.");
  t.sample("weir_hot_evicted_records_total", {}, sum.hot_evicted);
  t.family("weir_cold_reads_total", metric_type::counter,
           "Reads whose data had left memory, read back from the segment files off the event loops.");
  t.sample("weir_cold_reads_total", {}, sum.cold_reads);
  t.family("weir_cold_reads_pending", metric_type::gauge,
           "Cold reads in flight or waiting for a reader thread.");
  t.sample("weir_cold_reads_pending", {}, sum.cold_reads_pending);
  t.family(
      "weir_cold_read_duration_seconds", metric_type::histogram,
      "Time of each cold read, from the request's plan to its bytes back on the core (queueing included).");
  t.histogram("weir_cold_read_duration_seconds", {}, metrics::latency_us_bounds, cold_read, 1'000'000);
  if (sum.tiered) {
    t.single("weir_tier_objects_uploaded_total", metric_type::counter,
             "Objects uploaded to the bucket and recorded in the index (docs/cold-tier.md).",
             sum.tier.objects);
    t.single("weir_tier_uploaded_bytes_total", metric_type::counter, "Stream bytes in those objects.",
             sum.tier.bytes);
    t.single("weir_tier_upload_failures_total", metric_type::counter,
             "Failed upload attempts (each sent again later with the same key and bytes).",
             sum.upload_failures);
    t.single("weir_tier_upload_waiting_bytes", metric_type::gauge,
             "Bytes packed for the bucket and not yet in it.", sum.upload_waiting);
    t.single("weir_tier_local_bytes", metric_type::gauge,
             "Stream bytes in no object yet (appends get 503 when they reach local-bytes).",
             sum.tier.local_bytes);
    t.single("weir_tier_held_bytes", metric_type::gauge,
             "Stream bytes the node holds itself (on disk or in memory); past cold-keep-bytes those in the "
             "bucket are dropped.",
             sum.tier.held_bytes);
    t.single("weir_tier_dropped_bytes_total", metric_type::counter,
             "Stream bytes dropped from the node because they are in the bucket.", sum.tier.forgotten_bytes);
    t.single("weir_tier_bucket_reads_total", metric_type::counter,
             "Reads served from the bucket (bytes the node no longer holds).", sum.bucket_reads);
    t.single("weir_tier_bucket_read_failures_total", metric_type::counter,
             "Reads from the bucket that failed (answered 503).", sum.bucket_read_failures);
    t.single("weir_tier_objects_deleted_total", metric_type::counter,
             "Objects deleted from the bucket because nothing names them any more (deleted or expired "
             "streams, orphans), after cold-gc-grace-ms.",
             sum.sweep.objects_deleted);
    t.single("weir_tier_deleted_bytes_total", metric_type::counter, "The sizes of those objects.",
             sum.sweep.bytes_deleted);
    t.single("weir_tier_delete_failures_total", metric_type::counter,
             "Deletes of such objects that failed (a later sweep tries again).", sum.sweep.delete_failures);
    t.single("weir_tier_sweep_list_failures_total", metric_type::counter,
             "Listings of the bucket for objects to delete that failed (the next sweep starts over).",
             sum.sweep.list_failures);
    t.single("weir_tier_delete_candidates", metric_type::gauge,
             "Objects nothing names that wait for their grace period before they are deleted.",
             sum.sweep.candidates);
    t.single("weir_tier_restore_snapshots_total", metric_type::counter,
             "Restore snapshots uploaded (each shard's state, what --restore rebuilds a node from).",
             sum.snapshots.uploaded);
    t.single("weir_tier_restore_snapshot_failures_total", metric_type::counter,
             "Restore snapshots that could not be built or uploaded (tried again at the next interval).",
             sum.snapshots.failed);
    t.single(
        "weir_tier_restore_snapshots_too_large_total", metric_type::counter,
        "Of those, snapshots larger than the largest taken, 512 MiB (the bytes not yet in objects are in "
        "them).",
        sum.snapshots.too_large);
    t.family("weir_tier_restore_point_timestamp_seconds", metric_type::gauge,
             "The time a restore from the bucket would go back to: the oldest shard's last snapshot (0: a "
             "shard has none yet).");
    t.sample_double("weir_tier_restore_point_timestamp_seconds", {},
                    static_cast<double>(std::max<std::int64_t>(0, restore_point_ms)) / 1000.0);
  }
  if (f.cold) {
    t.family("weir_tier_put_duration_seconds", metric_type::histogram,
             "Each PUT to the bucket (one attempt; retries are attempts of their own).");
    t.histogram("weir_tier_put_duration_seconds", {}, metrics::latency_us_bounds, f.put_us, 1'000'000);
    t.family("weir_tier_get_duration_seconds", metric_type::histogram, "Each ranged GET from the bucket.");
    t.histogram("weir_tier_get_duration_seconds", {}, metrics::latency_us_bounds, f.get_us, 1'000'000);
    t.single("weir_tier_store_requests_total", metric_type::counter,
             "Requests to the bucket (PUT, GET, HEAD, LIST, DELETE; each attempt).", f.store_requests);
    t.single("weir_tier_store_request_failures_total", metric_type::counter,
             "Of those, the ones that did not succeed (an error answer, a timeout, a reset).",
             f.store_failures);
    t.single("weir_tier_cache_hits_total", metric_type::counter,
             "Blocks of cold objects a read found in the node's block cache.", f.fetch.block_hits);
    t.single("weir_tier_cache_misses_total", metric_type::counter,
             "Blocks a read had to fetch from the bucket (hit ratio: hits / (hits + misses)).",
             f.fetch.block_misses);
    t.single("weir_tier_cache_bytes", metric_type::gauge, "Bytes of blocks in the block cache.",
             f.fetch.cached_bytes);
    t.single("weir_tier_fetched_bytes_total", metric_type::counter, "Bytes read from the bucket.",
             f.fetch.bytes_fetched);
  }
  t.family("weir_log_commands_in_flight", metric_type::gauge, "Commands applied and waiting for the log.");
  t.sample("weir_log_commands_in_flight", {}, sum.commands_in_flight);
  t.family("weir_log_bytes_in_flight", metric_type::gauge, "Bytes of the commands waiting for the log.");
  t.sample("weir_log_bytes_in_flight", {}, sum.bytes_in_flight);
  if (sum.durable) {
    t.family("weir_log_segments", metric_type::gauge, "Write-ahead log segment files on disk.");
    t.sample("weir_log_segments", {}, sum.log.segments);
    t.family("weir_log_segment_bytes", metric_type::gauge, "Bytes of the write-ahead log's segment files.");
    t.sample("weir_log_segment_bytes", {}, sum.log.segment_bytes);
    t.family("weir_log_records_total", metric_type::counter, "Records written to the write-ahead log.");
    t.sample("weir_log_records_total", {}, sum.log.records);
    t.family("weir_log_batches_total", metric_type::counter, "Batches (group commits) written to the log.");
    t.sample("weir_log_batches_total", {}, sum.log.batches);
    t.family("weir_log_inline_batches_total", metric_type::counter,
             "Batches of one record written and synced on the event loop itself (a lone writer).");
    t.sample("weir_log_inline_batches_total", {}, sum.log.inline_batches);
    t.family("weir_log_prepared_segments_total", metric_type::counter,
             "Segment rolls onto a file of zeros prepared ahead of time (fdatasync skips the journal).");
    t.sample("weir_log_prepared_segments_total", {}, sum.log.prepared_segments);
    t.family("weir_log_failed_batches_total", metric_type::counter,
             "Log batches undone after a write error.");
    t.sample("weir_log_failed_batches_total", {}, sum.log.failed_batches);
    t.family("weir_log_fsyncs_total", metric_type::counter, "fdatasync calls on log segment files.");
    t.sample("weir_log_fsyncs_total", {}, sum.log.syncs);
    t.family("weir_log_fsync_duration_seconds", metric_type::histogram, "Time of each log fdatasync.");
    t.histogram("weir_log_fsync_duration_seconds", {}, metrics::latency_us_bounds, fsync, 1'000'000);
    t.family("weir_log_batch_records", metric_type::histogram, "Records per log batch (group commit).");
    t.histogram("weir_log_batch_records", {}, metrics::count_bounds, batch_records);
    t.family("weir_log_batch_bytes", metric_type::histogram, "Bytes per log batch.");
    t.histogram("weir_log_batch_bytes", {}, metrics::byte_bounds, batch_bytes);
  }
  if (f.cluster) {
    const cluster::leadership_counts& l = f.leadership;
    t.family(
        "weir_raft_elections_started_total", metric_type::counter,
        "Elections this node stood in (became a candidate of a new term), by cause: its election timer ran "
        "out (timeout), the leader handed the group over (transfer), the leader's connection closed "
        "(link_closed).");
    t.sample("weir_raft_elections_started_total", {{"cause", "timeout"}}, l.elections_timeout);
    t.sample("weir_raft_elections_started_total", {{"cause", "transfer"}}, l.elections_transfer);
    t.sample("weir_raft_elections_started_total", {{"cause", "link_closed"}}, l.elections_link_closed);
    t.sample("weir_raft_elections_started_total", {{"cause", "other"}},
             l.elections_started - l.elections_timeout - l.elections_transfer - l.elections_link_closed);
    t.family("weir_raft_leaderships_won_total", metric_type::counter,
             "Times this node became a group's leader.");
    t.sample("weir_raft_leaderships_won_total", {}, l.leaderships_won);
    t.family("weir_raft_leaderships_lost_total", metric_type::counter,
             "Times this node stopped leading a group, by cause: a message of a newer term (higher_term), no "
             "majority answered within an election timeout (quorum_lost), a hand-over (other).");
    t.sample("weir_raft_leaderships_lost_total", {{"cause", "higher_term"}}, l.lost_higher_term);
    t.sample("weir_raft_leaderships_lost_total", {{"cause", "quorum_lost"}}, l.lost_quorum);
    t.sample("weir_raft_leaderships_lost_total", {{"cause", "other"}},
             l.leaderships_lost - l.lost_higher_term - l.lost_quorum);
    t.family("weir_raft_leader_changes_total", metric_type::counter,
             "Times the leader this node knows of a group became another node (itself included).");
    t.sample("weir_raft_leader_changes_total", {}, l.leader_changes);
    t.family("weir_raft_handovers_started_total", metric_type::counter,
             "Leaderships this node began to hand over to spread leaders evenly (balance-leaders).");
    t.sample("weir_raft_handovers_started_total", {}, l.handovers_started);
    t.family("weir_raft_balance_held_total", metric_type::counter,
             "Seconds in which balance-leaders handed nothing over because this node had seen elections by "
             "timeout or a lost quorum in the last 10 s (or five election timeouts).");
    t.sample("weir_raft_balance_held_total", {}, l.balance_held);
  }
  if (f.subscriptions) {
    t.family("weir_subscriptions", metric_type::gauge, "Subscriptions the node keeps.");
    t.sample("weir_subscriptions", {}, f.subscription_count);
    t.family("weir_subscription_deliveries_total", metric_type::counter,
             "Webhook deliveries, by result (failed: an error or a non-2xx answer; retried later).");
    t.sample("weir_subscription_deliveries_total", {{"result", "ok"}}, f.deliveries_ok);
    t.sample("weir_subscription_deliveries_total", {{"result", "failed"}}, f.deliveries_failed);
  }
  return t.take();
}

}  // namespace weir::server

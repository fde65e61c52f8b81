// workload_options: which workloads `weir bench` runs and how big they are, beyond the seed's
// concurrency sweep: many streams, SSE fan-out and a soak. Parsed from the command line; pure values,
// no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace weir::bench {

enum class workload : std::uint8_t { seed, many_streams, fanout, soak, saturation };

struct workload_options {
  std::vector<workload> workloads = {workload::seed};

  // many-streams: M writers append `append_bytes` round-robin over N streams for `many_secs`.
  std::vector<unsigned> stream_levels = {100, 500, 2000};
  unsigned writers = 64;
  std::size_t append_bytes = 256;
  double many_secs = 15;

  // fanout: one writer appends `fanout_events` events at `fanout_rate` per second to one stream read
  // by N SSE subscribers.
  std::vector<unsigned> subscriber_levels = {50, 200, 500, 1000};
  double fanout_rate = 20;
  unsigned fanout_events = 200;

  // soak: appends, catch-up reads, long-polls and SSE over `soak_streams` streams (rotated: deleted and
  // created anew every `soak_stream_appends` appends) for `soak_secs`, sampled every `soak_sample_secs`.
  double soak_secs = 600;
  double soak_sample_secs = 10;
  unsigned soak_streams = 16;
  double soak_rate = 400;  // appends per second, all streams together
  unsigned soak_stream_appends = 1000;
  unsigned soak_readers = 4;  // closed-loop catch-up readers (20 ms apart)

  // saturation (saturation_workload.h): for each stream count, one producer per stream writes
  // `append_bytes` over the connection ladder until throughput stops climbing by more than sat_plateau.
  std::vector<unsigned> sat_stream_levels = {100, 1000, 10'000};
  std::vector<unsigned> sat_connections = {64, 256, 1024, 4096};
  double sat_secs = 10;
  double sat_warmup_secs = 2;
  double sat_plateau = 0.05;

  // Target name -> the PIDs of its server's processes on this machine (a cluster's nodes: summed), for
  // RSS, descriptors and CPU.
  std::map<std::string, std::vector<int>> server_pids;
  // Free-form facts for the report ("weir version" -> "3f7d88a"), in the order given.
  std::vector<std::pair<std::string, std::string>> info;
};

const char* workload_name(workload w);
// "seed,many-streams,fanout,soak,saturation" or "all" (the first four); no duplicates, at least one.
result<std::vector<workload>> parse_workloads(std::string_view list);
// "100,500,2000" for `option` (named in errors): positive, strictly increasing, at most `max`.
result<std::vector<unsigned>> parse_levels(std::string_view list, std::string_view option,
                                           unsigned max = 100'000);
// "NAME=PID"
// NAME=PID or NAME=PID,PID,... (the nodes of a cluster target).
result<std::pair<std::string, std::vector<int>>> parse_server_pid(std::string_view spec);
// "KEY=VALUE" (the value may contain '=')
result<std::pair<std::string, std::string>> parse_info(std::string_view spec);
// Ranges of the workload options, e.g. a fan-out rate that is positive and at most 10,000/s.
status validate(const workload_options& w);

bool runs(const workload_options& w, workload k);

}  // namespace weir::bench

#include "bench/results_reader.h"

#include <simdjson.h>

#include <fmt/format.h>

namespace weir::bench {
namespace {

error bad(std::string reason) {
  return error{1, "results.json: " + std::move(reason)};
}

// Lookups that may fail (a missing field, null) give a value, never an exception.
using field = simdjson::simdjson_result<simdjson::dom::element>;

double number_or_nan(field e) {
  double v = 0;
  if (e.error() != simdjson::SUCCESS || e.get_double().get(v) != simdjson::SUCCESS) return no_value;
  return v;
}

std::string string_or_empty(field e) {
  std::string_view s;
  if (e.error() != simdjson::SUCCESS || e.get_string().get(s) != simdjson::SUCCESS) return {};
  return std::string(s);
}

}  // namespace

result<bench_report> parse_report(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc); err)
    return bad(simdjson::error_message(err));
  bench_report r;
  r.tool_version = string_or_empty(doc["tool"]);
  r.started_at = string_or_empty(doc["started_at"]);
  r.finished_at = string_or_empty(doc["finished_at"]);
  r.command = string_or_empty(doc["command"]);
  simdjson::dom::object obj;
  if (doc["machine"].get_object().get(obj) == simdjson::SUCCESS) {
    for (auto [k, v] : obj) r.machine[std::string(k)] = string_or_empty(field(simdjson::dom::element(v)));
  }
  if (doc["options"].get_object().get(obj) == simdjson::SUCCESS) {
    for (auto [k, v] : obj) r.options[std::string(k)] = number_or_nan(field(simdjson::dom::element(v)));
  }
  simdjson::dom::array arr;
  if (doc["concurrency"].get_array().get(arr) != simdjson::SUCCESS) return bad("no concurrency array");
  for (auto c : arr) {
    std::uint64_t v = 0;
    if (c.get_uint64().get(v) != simdjson::SUCCESS) return bad("bad concurrency level");
    r.concurrency.push_back(static_cast<unsigned>(v));
  }
  if (doc["targets"].get_array().get(arr) != simdjson::SUCCESS) return bad("no targets array");
  for (auto t : arr) {
    target_info info{string_or_empty(t["name"]), string_or_empty(t["url"]), {}};
    simdjson::dom::array bases;
    if (t["read_bases"].get_array().get(bases) == simdjson::SUCCESS) {
      for (auto b : bases) info.read_bases.push_back(string_or_empty(field(simdjson::dom::element(b))));
    }
    r.targets.push_back(std::move(info));
  }
  if (doc["targets"].get_array().get(arr) == simdjson::SUCCESS) {
    std::size_t i = 0;
    for (auto t : arr) {
      std::int64_t pid = 0;
      if (t["server_pid"].get_int64().get(pid) == simdjson::SUCCESS)
        r.targets[i].server_pid = static_cast<int>(pid);
      r.targets[i].server_cpu_s = number_or_nan(t["server_cpu_s"]);
      ++i;
    }
  }
  if (doc["workloads"].get_array().get(arr) == simdjson::SUCCESS) {
    for (auto w : arr) r.workloads.push_back(string_or_empty(field(simdjson::dom::element(w))));
  }
  if (doc["info"].get_array().get(arr) == simdjson::SUCCESS) {
    for (auto kv : arr) r.info.emplace_back(string_or_empty(kv.at(0)), string_or_empty(kv.at(1)));
  }
  auto levels = [&](const char* key, std::vector<unsigned>& into) {
    simdjson::dom::array a;
    if (doc[key].get_array().get(a) != simdjson::SUCCESS) return;
    for (auto v : a) {
      std::uint64_t n = 0;
      if (v.get_uint64().get(n) == simdjson::SUCCESS) into.push_back(static_cast<unsigned>(n));
    }
  };
  levels("stream_levels", r.stream_levels);
  levels("subscriber_levels", r.subscriber_levels);
  auto uint_of = [](field e) {
    std::uint64_t n = 0;
    if (e.error() != simdjson::SUCCESS || e.get_uint64().get(n) != simdjson::SUCCESS) return std::uint64_t{0};
    return n;
  };
  auto counters_of = [](simdjson::dom::element e, const char* key,
                        std::map<std::string, std::uint64_t>& into) {
    simdjson::dom::object o;
    if (e[key].get_object().get(o) != simdjson::SUCCESS) return;
    for (auto [k, v] : o) {
      std::uint64_t n = 0;
      if (v.get_uint64().get(n) == simdjson::SUCCESS) into[std::string(k)] = n;
    }
  };
  auto tally_of = [&](simdjson::dom::element e, workload_tally& t) {
    counters_of(e, "error_kinds", t.error_kinds);
    counters_of(e, "counts", t.counts);
    t.cpu = {number_or_nan(e["client_cpu"]["wall_s"]), number_or_nan(e["client_cpu"]["cpu_s"])};
    if (auto n = uint_of(e["generator_threads"]); n > 0) t.threads = static_cast<unsigned>(n);
  };
  if (doc["many_streams"].get_array().get(arr) == simdjson::SUCCESS) {
    for (auto e : arr) {
      many_streams_result m;
      m.target = string_or_empty(e["target"]);
      m.streams = static_cast<unsigned>(uint_of(e["streams"]));
      m.writers = static_cast<unsigned>(uint_of(e["writers"]));
      m.ops_s = number_or_nan(e["ops_s"]);
      m.p50_ms = number_or_nan(e["p50_ms"]);
      m.p99_ms = number_or_nan(e["p99_ms"]);
      tally_of(e, m);
      r.many_streams.push_back(std::move(m));
    }
  }
  levels("saturation_streams", r.saturation_streams);
  if (doc["saturation"].get_array().get(arr) == simdjson::SUCCESS) {
    for (auto e : arr) {
      saturation_result x;
      x.target = string_or_empty(e["target"]);
      x.protocol = string_or_empty(e["protocol"]);
      x.streams = static_cast<unsigned>(uint_of(e["streams"]));
      x.ceiling = static_cast<std::size_t>(uint_of(e["ceiling"]));
      x.rss_before_mib = number_or_nan(e["rss_before_mib"]);
      x.rss_streams_mib = number_or_nan(e["rss_streams_mib"]);
      x.create_s = number_or_nan(e["create_s"]);
      simdjson::dom::array steps;
      if (e["levels"].get_array().get(steps) == simdjson::SUCCESS) {
        for (auto l : steps) {
          saturation_level v;
          v.connections = static_cast<unsigned>(uint_of(l["connections"]));
          v.ops_s = number_or_nan(l["ops_s"]);
          v.p50_ms = number_or_nan(l["p50_ms"]);
          v.p99_ms = number_or_nan(l["p99_ms"]);
          v.p999_ms = number_or_nan(l["p999_ms"]);
          v.ok = uint_of(l["ok"]);
          v.errors = uint_of(l["errors"]);
          v.server_cpu_s = number_or_nan(l["server_cpu_s"]);
          v.server_rss_mib = number_or_nan(l["server_rss_mib"]);
          v.server_cgroup_ws_mib = number_or_nan(l["server_cgroup_ws_mib"]);
          v.client = {number_or_nan(l["client_cpu"]["wall_s"]), number_or_nan(l["client_cpu"]["cpu_s"])};
          v.client_lag_p99_ms = number_or_nan(l["client_lag_p99_ms"]);
          x.levels.push_back(v);
        }
      }
      if (x.ceiling >= x.levels.size()) x.ceiling = 0;
      tally_of(e, x);
      r.saturation.push_back(std::move(x));
    }
  }
  if (doc["fanout"].get_array().get(arr) == simdjson::SUCCESS) {
    for (auto e : arr) {
      fanout_result f;
      f.target = string_or_empty(e["target"]);
      f.subscribers = static_cast<unsigned>(uint_of(e["subscribers"]));
      f.rate_per_s = number_or_nan(e["rate_per_s"]);
      f.p50_ms = number_or_nan(e["p50_ms"]);
      f.p99_ms = number_or_nan(e["p99_ms"]);
      f.max_ms = number_or_nan(e["max_ms"]);
      f.expected = uint_of(e["expected"]);
      f.delivered = uint_of(e["delivered"]);
      f.lost = uint_of(e["lost"]);
      f.duplicated = uint_of(e["duplicated"]);
      tally_of(e, f);
      r.fanout.push_back(std::move(f));
    }
  }
  if (doc["soak"].get_array().get(arr) == simdjson::SUCCESS) {
    for (auto e : arr) {
      soak_result k;
      k.target = string_or_empty(e["target"]);
      k.duration_s = number_or_nan(e["duration_s"]);
      simdjson::dom::array samples;
      if (e["samples"].get_array().get(samples) == simdjson::SUCCESS) {
        for (auto x : samples) {
          soak_sample s;
          s.t_s = number_or_nan(x["t_s"]);
          s.rss_mib = number_or_nan(x["rss_mib"]);
          s.fds = number_or_nan(x["fds"]);
          s.append_p99_ms = number_or_nan(x["append_p99_ms"]);
          s.read_p99_ms = number_or_nan(x["read_p99_ms"]);
          s.ops_s = number_or_nan(x["ops_s"]);
          s.client_share = number_or_nan(x["client_share"]);
          k.samples.push_back(s);
        }
      }
      tally_of(e, k);
      r.soak.push_back(std::move(k));
    }
  }
  if (doc["runs"].get_array().get(arr) != simdjson::SUCCESS) return bad("no runs array");
  for (auto run : arr) {
    run_result rr;
    rr.target = string_or_empty(run["target"]);
    std::uint64_t c = 0;
    if (run["concurrency"].get_uint64().get(c) != simdjson::SUCCESS) return bad("a run without concurrency");
    rr.concurrency = static_cast<unsigned>(c);
    rr.append_p50_ms = number_or_nan(run["append_p50_ms"]);
    rr.append_p99_ms = number_or_nan(run["append_p99_ms"]);
    rr.read_p99_ms = number_or_nan(run["read_p99_ms"]);
    rr.write_mib_s = number_or_nan(run["write_mib_s"]);
    rr.read_mib_s = number_or_nan(run["read_mib_s"]);
    rr.small_req_s = number_or_nan(run["small_req_s"]);
    rr.sse_p50_ms = number_or_nan(run["sse_p50_ms"]);
    rr.sse_p99_ms = number_or_nan(run["sse_p99_ms"]);
    auto counters = [&](const char* key, std::map<std::string, std::uint64_t>& into) {
      simdjson::dom::object o;
      if (run[key].get_object().get(o) != simdjson::SUCCESS) return;
      for (auto [k, v] : o) {
        std::uint64_t n = 0;
        if (v.get_uint64().get(n) == simdjson::SUCCESS) into[std::string(k)] = n;
      }
    };
    counters("error_kinds", rr.error_kinds);
    counters("counts", rr.counts);
    simdjson::dom::object cpu;
    if (run["client_cpu"].get_object().get(cpu) == simdjson::SUCCESS) {
      for (auto [k, v] : cpu)
        rr.client_cpu[std::string(k)] = {number_or_nan(v["wall_s"]), number_or_nan(v["cpu_s"])};
    }
    r.runs.push_back(std::move(rr));
  }
  return r;
}

}  // namespace weir::bench

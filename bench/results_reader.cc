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

// Why weir's metrics do not use prometheus-cpp (Debian prometheus-cpp-dev 1.0.1): the same per-request
// bookkeeping and the same scrape, measured both ways on this machine (docs/benchmarks.md, "Metrics").
//
//   record:  what one answered request costs: a requests{op,code} counter, bytes in, bytes out and a
//            latency histogram observation. weir: base/metrics.h (one writer per core: relaxed load and
//            store). prometheus-cpp: its Counter and Histogram (atomic<double> updated with a
//            compare-exchange loop), once from one thread and once from two threads sharing the metric
//            (what two cores would do with one registry; it has no per-core mode).
//   scrape:  14 operations x 4 status codes of counters, bytes in and out per operation and 14 latency
//            histograms of 18 buckets, written as text. weir: base/prometheus_text.h. prometheus-cpp:
//            Registry::Collect + TextSerializer.
//
// Not part of the build (prometheus-cpp is not a dependency). By hand, from the repository root:
//   apt-get install prometheus-cpp-dev
//   g++ -O2 -std=c++20 -Isrc bench/metrics/encoder_compare.cc src/base/metrics.cc src/base/prometheus_text.cc
//   \
//       -lprometheus-cpp-core -lfmt -pthread -o /tmp/encoder_compare && /tmp/encoder_compare
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/metrics.h"
#include "base/prometheus_text.h"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr int ops = 14;
constexpr std::array<const char*, 4> codes = {"200", "204", "404", "503"};

double ns_per(clock_type::time_point t0, long n) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() / static_cast<double>(n);
}

struct weir_core {
  std::array<std::array<weir::metrics::counter, 4>, ops> requests;
  std::array<weir::metrics::counter, ops> in, out;
  std::vector<std::unique_ptr<weir::metrics::histogram>> latency;
  weir_core() {
    for (int i = 0; i < ops; ++i)
      latency.push_back(std::make_unique<weir::metrics::histogram>(weir::metrics::latency_us_bounds));
  }
  void record(long i) {
    const int op = static_cast<int>(i % ops);
    requests[op][i & 3].add();
    in[op].add(120);
    out[op].add(480);
    latency[op]->observe(static_cast<std::uint64_t>(i % 3000));
  }
};

struct prom_metrics {
  prometheus::Registry registry;
  std::vector<std::array<prometheus::Counter*, 4>> requests;
  std::vector<prometheus::Counter*> in, out;
  std::vector<prometheus::Histogram*> latency;
  prom_metrics() {
    auto& req =
        prometheus::BuildCounter().Name("weir_http_requests_total").Help("Requests.").Register(registry);
    auto& bin =
        prometheus::BuildCounter().Name("weir_http_request_bytes_total").Help("In.").Register(registry);
    auto& bout =
        prometheus::BuildCounter().Name("weir_http_response_bytes_total").Help("Out.").Register(registry);
    auto& lat = prometheus::BuildHistogram()
                    .Name("weir_http_request_duration_seconds")
                    .Help("Latency.")
                    .Register(registry);
    prometheus::Histogram::BucketBoundaries bounds;
    for (auto b : weir::metrics::latency_us_bounds) bounds.push_back(static_cast<double>(b) / 1e6);
    for (int op = 0; op < ops; ++op) {
      const std::string name = "op" + std::to_string(op);
      std::array<prometheus::Counter*, 4> row{};
      for (int c = 0; c < 4; ++c) row[c] = &req.Add({{"op", name}, {"code", codes[c]}});
      requests.push_back(row);
      in.push_back(&bin.Add({{"op", name}}));
      out.push_back(&bout.Add({{"op", name}}));
      latency.push_back(&lat.Add({{"op", name}}, bounds));
    }
  }
  void record(long i) {
    const auto op = static_cast<std::size_t>(i % ops);
    requests[op][i & 3]->Increment();
    in[op]->Increment(120);
    out[op]->Increment(480);
    latency[op]->Observe(static_cast<double>(i % 3000) / 1e6);
  }
};

std::string weir_scrape(const std::vector<std::unique_ptr<weir_core>>& cores) {
  weir::metrics::prometheus_text t;
  t.family("weir_http_requests_total", weir::metrics::metric_type::counter, "Requests.");
  for (int op = 0; op < ops; ++op) {
    const std::string name = "op" + std::to_string(op);
    for (int c = 0; c < 4; ++c) {
      std::uint64_t n = 0;
      for (const auto& k : cores) n += k->requests[op][c].get();
      t.sample("weir_http_requests_total", {{"op", name}, {"code", codes[c]}}, n);
    }
  }
  for (const bool is_in : {true, false}) {
    const char* fam = is_in ? "weir_http_request_bytes_total" : "weir_http_response_bytes_total";
    t.family(fam, weir::metrics::metric_type::counter, is_in ? "In." : "Out.");
    for (int op = 0; op < ops; ++op) {
      std::uint64_t v = 0;
      for (const auto& k : cores) v += (is_in ? k->in[op] : k->out[op]).get();
      t.sample(fam, {{"op", "op" + std::to_string(op)}}, v);
    }
  }
  t.family("weir_http_request_duration_seconds", weir::metrics::metric_type::histogram, "Latency.");
  for (int op = 0; op < ops; ++op) {
    const std::string name = "op" + std::to_string(op);
    weir::metrics::histogram_counts h;
    for (const auto& k : cores) h.merge(k->latency[op]->read());
    const weir::metrics::label l[] = {{"op", name}};
    t.histogram("weir_http_request_duration_seconds", l, weir::metrics::latency_us_bounds, h, 1'000'000);
  }
  return t.take();
}

}  // namespace

int main() {
  constexpr long n = 20'000'000;
  std::printf("record, ns per request (4 metric updates), %ld requests per thread\n", n);
  {
    weir_core core;
    auto t0 = clock_type::now();
    for (long i = 0; i < n; ++i) core.record(i);
    std::printf("  weir base/metrics.h, 1 thread:           %6.2f\n", ns_per(t0, n));
  }
  {
    std::vector<std::unique_ptr<weir_core>> cores;
    cores.push_back(std::make_unique<weir_core>());
    cores.push_back(std::make_unique<weir_core>());
    auto t0 = clock_type::now();
    std::thread a([&] {
      for (long i = 0; i < n; ++i) cores[0]->record(i);
    });
    std::thread b([&] {
      for (long i = 0; i < n; ++i) cores[1]->record(i);
    });
    a.join();
    b.join();
    std::printf("  weir base/metrics.h, 2 threads, per core: %6.2f\n", ns_per(t0, n));
  }
  {
    prom_metrics p;
    auto t0 = clock_type::now();
    for (long i = 0; i < n; ++i) p.record(i);
    std::printf("  prometheus-cpp, 1 thread:                 %6.2f\n", ns_per(t0, n));
  }
  {
    prom_metrics p;
    auto t0 = clock_type::now();
    std::thread a([&] {
      for (long i = 0; i < n; ++i) p.record(i);
    });
    std::thread b([&] {
      for (long i = 0; i < n; ++i) p.record(i);
    });
    a.join();
    b.join();
    std::printf("  prometheus-cpp, 2 threads, shared:        %6.2f\n", ns_per(t0, n));
  }

  constexpr int scrapes = 2'000;
  std::printf("scrape, us per scrape (%d ops x 4 codes + %d histograms), %d scrapes\n", ops, ops, scrapes);
  {
    std::vector<std::unique_ptr<weir_core>> cores;
    cores.push_back(std::make_unique<weir_core>());
    cores.push_back(std::make_unique<weir_core>());
    for (long i = 0; i < 100'000; ++i) cores[i & 1]->record(i);
    std::size_t bytes = 0;
    auto t0 = clock_type::now();
    for (int i = 0; i < scrapes; ++i) bytes += weir_scrape(cores).size();
    std::printf("  weir prometheus_text (2 cores merged):    %6.1f  (%zu bytes)\n",
                ns_per(t0, scrapes) / 1000, bytes / scrapes);
  }
  {
    prom_metrics p;
    for (long i = 0; i < 100'000; ++i) p.record(i);
    prometheus::TextSerializer ser;
    std::size_t bytes = 0;
    auto t0 = clock_type::now();
    for (int i = 0; i < scrapes; ++i) bytes += ser.Serialize(p.registry.Collect()).size();
    std::printf("  prometheus-cpp Collect + TextSerializer:  %6.1f  (%zu bytes)\n",
                ns_per(t0, scrapes) / 1000, bytes / scrapes);
  }
  return 0;
}

// weir-parser-bench: CPU time of parse_request_head per request (Google Benchmark), on the request
// wrk sends and on a browser-like one, 16 pipelined copies per iteration as the engine sees them
// with `wrk -s pipeline.lua`. A program, not a test: figures go to docs/http-parser.md.
//
//   build/release/bench/http/weir-parser-bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <string>
#include <string_view>

#include "http/request_parser.h"

namespace {

using weir::http::parse_request_head;
using weir::http::parse_status;
using weir::http::request_head;

constexpr std::string_view wrk_request = "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:18080\r\n\r\n";

constexpr std::string_view browser_request =
    "GET /v1/stream/chat-42?offset=0000000000000000_0000000000000000&live=long-poll HTTP/1.1\r\n"
    "Host: streams.example.com\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\r\n"
    "Accept: application/json, text/plain;q=0.9, */*;q=0.8\r\n"
    "Accept-Language: en-GB,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Origin: https://app.example.com\r\n"
    "Connection: keep-alive\r\n"
    "\r\n";

void parse_pipeline(benchmark::State& state, std::string_view one) {
  std::string batch;
  for (int i = 0; i < 16; ++i) batch.append(one);
  static request_head head;  // 3 KB: not on the benchmark's stack
  for (auto _ : state) {
    std::string_view rest = batch;
    while (!rest.empty()) {
      const auto r = parse_request_head(rest, head);
      if (r.status != parse_status::complete) {
        state.SkipWithError("request did not parse");
        return;
      }
      benchmark::DoNotOptimize(head.path.data());
      rest.remove_prefix(r.consumed);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 16);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * batch.size()));
}

void wrk_plaintext(benchmark::State& state) {
  parse_pipeline(state, wrk_request);
}
void browser_like(benchmark::State& state) {
  parse_pipeline(state, browser_request);
}

BENCHMARK(wrk_plaintext);
BENCHMARK(browser_like);

}  // namespace

BENCHMARK_MAIN();

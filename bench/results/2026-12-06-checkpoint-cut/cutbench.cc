// Times a checkpoint's work on its loop (the snapshot and the segments its records reference) on N streams
// x M located records (256 B appends): two walks over the records against one.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>
#include "streams/state_machine.h"
using namespace weir::streams;
extern "C" {
const char* malloc_conf = "thp:always,dirty_decay_ms:60000";
}
int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 10000, m = argc > 2 ? std::atoi(argv[2]) : 76;
  state_machine sm;
  std::uint64_t off = 0;
  (void)off;
  for (int i = 0; i < n; ++i) {
    create_command c;
    c.path = "/v1/stream/saturation-" + std::to_string(i);
    c.content_type = "application/octet-stream";
    c.now_ms = 1;
    sm.apply(c);
  }
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) {
      append_command a;
      a.path = "/v1/stream/saturation-" + std::to_string(i);
      a.body.bytes = make_chunk(std::string(256, 'x'));
      a.now_ms = 2;
      producer_ref p;
      p.id = "producer-" + std::to_string(i);
      p.epoch = 0;
      p.seq = j;
      a.producer = p;
      outcome o = sm.apply(a);
      sm.locate(o.meta->generation, o.meta->tail.value(),
                disk_location{1 + off / (128u << 20), off % (128u << 20), 0, 40});
      off += 330;
    }
  for (int k = 0; k < (getenv("CUTS") ? atoi(getenv("CUTS")) : 6); ++k) {
    auto t0 = std::chrono::steady_clock::now();
    snapshot_cut c = sm.cut();
    auto t1 = std::chrono::steady_clock::now();
    std::vector<std::uint64_t> segments;
    auto blob = c.encode(0, segments);
    auto t2 = std::chrono::steady_clock::now();
    std::printf("cut %.2f ms, encode %.1f ms, %zu bytes\n",
                std::chrono::duration<double, std::milli>(t1 - t0).count(),
                std::chrono::duration<double, std::milli>(t2 - t1).count(), blob->size());
  }
}

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
  // A checkpoint's work on the loop, two ways, alternated: the snapshot and a second walk for the
  // referenced segments (as it was), or both in one walk (snapshot(core, segments)).
  for (int k = 0; k < 6; ++k) {
    const bool one_walk = k % 2 == 1;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::uint64_t> segments;
    std::vector<std::byte> blob;
    if (one_walk) {
      blob = sm.snapshot(0, segments);
    } else {
      blob = sm.snapshot();
      segments = sm.referenced_segments(0);
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %zu bytes, %zu segments, %.1f ms\n", one_walk ? "one walk " : "two walks", blob.size(),
                segments.size(), ms);
  }
}

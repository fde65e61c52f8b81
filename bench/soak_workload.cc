#include "bench/soak_workload.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "bench/latency_histogram.h"
#include "bench/proc_sampler.h"
#include "bench/request_loop.h"
#include "bench/results_writer.h"
#include "bench/sse_workload.h"
#include "client/sse_event_parser.h"

namespace weir::bench {
namespace {

using client::sse_event;
using client::sse_event_parser;

constexpr const char* binary_type = "application/octet-stream";

bool success_2xx(int status) {
  return status >= 200 && status < 300;
}

// A stream name slot: its current generation, and whether that generation exists yet.
struct slot {
  unsigned gen = 0;
  bool ready = false;
  std::string name;
  // Writer.
  std::unique_ptr<http_connection> writer;
  std::string head;
  unsigned appended = 0;  // in this generation
  std::int64_t last_sent_ns = 0;
  // Long-poll reader.
  std::unique_ptr<http_connection> poller;
  std::string poll_head;
  unsigned poll_gen = 0;
  std::string poll_offset = "-1";
  // SSE subscriber.
  std::unique_ptr<http_connection> sse;
  std::string sse_head;
  sse_event_parser parser;
  unsigned sse_gen = 0;
  std::string sse_offset = "-1";
  bool sse_live = false;
  bool sse_open = false;  // a subscription is in flight
};

struct reader {
  std::unique_ptr<http_connection> conn;
  std::string head;
  std::size_t next_slot = 0;
};

}  // namespace

soak_result run_soak(const target_spec& target, const soak_config& cfg, progress_line& progress) {
  soak_result r;
  r.target = target.name;
  r.duration_s = cfg.secs;
  phase_driver driver;
  auto& loop = driver.loop();
  auto error = [&](std::string_view kind) { ++r.error_kinds["soak." + std::string(kind)]; };
  auto count = [&](const char* what) { ++r.counts[what]; };
  const std::string body(cfg.append_bytes, 'k');
  const auto interval_ns = static_cast<std::int64_t>(1e9 * cfg.streams / cfg.rate);
  const auto start_ns = mono_ns();
  const auto end_ns = start_ns + static_cast<std::int64_t>(cfg.secs * 1e9);
  bool stopping = false;
  auto later = [&](std::int64_t ns, std::function<void()> fn) {
    loop.add_timer(std::chrono::milliseconds(std::max<std::int64_t>(0, (ns + 999'999) / 1'000'000)),
                   [&stopping, fn = std::move(fn)] {
                     if (!stopping) fn();
                   });
  };
  auto transport_kind = [](const http_response& resp) {
    return resp.error == "timeout" ? std::string("timeout") : std::string("transport");
  };

  latency_histogram append_h, read_h;  // this interval's
  std::uint64_t interval_ops = 0;

  std::vector<slot> slots(cfg.streams);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    slots[i].writer = std::make_unique<http_connection>(loop, target.base(i));
    slots[i].poller = std::make_unique<http_connection>(loop, target.read_base(i));
    slots[i].sse = std::make_unique<http_connection>(loop, target.read_base(i));
  }
  std::vector<reader> readers(cfg.readers);
  for (std::size_t i = 0; i < readers.size(); ++i) {
    readers[i].conn = std::make_unique<http_connection>(loop, target.read_base(i));
    readers[i].next_slot = i;
  }
  auto name_of = [&](std::size_t i, unsigned gen) {
    return fmt::format("{}-{}-g{}", cfg.stream_prefix, i, gen);
  };

  // Writer: create, append `stream_appends` times (paced), delete, next generation.
  std::function<void(std::size_t)> create, append, rotate, subscribe;
  create = [&](std::size_t i) {
    auto& s = slots[i];
    s.name = name_of(i, s.gen);
    s.head = format_request_head("PUT", target.base(i), s.name, "", binary_type, 0, true);
    s.writer->request(s.head, {}, false, [&, i](http_response& resp) {
      auto& sl = slots[i];
      if (!resp.ok()) {
        error("create_" + transport_kind(resp));
      } else if (resp.status != 201 && resp.status != 200) {
        error(fmt::format("create_status_{}", resp.status));
      } else {
        sl.ready = true;
        sl.appended = 0;
        count("streams_created");
        sl.head = format_request_head("POST", target.base(i), sl.name, "", binary_type, body.size(), true);
        // A server need not end the SSE responses of a deleted stream (the Node reference server does
        // not): a subscriber still on an older generation moves to this one.
        if (sl.sse_open && sl.sse_gen != sl.gen) {
          sl.sse->close();
          sl.sse_open = false;
          count("sse_moved_to_next_generation");
          subscribe(i);
        }
        append(i);
        return;
      }
      later(1'000'000'000, [&, i] { create(i); });  // try again in a second
    });
  };
  append = [&](std::size_t i) {
    auto& s = slots[i];
    if (mono_ns() >= end_ns) return;
    if (s.appended >= cfg.stream_appends) {
      rotate(i);
      return;
    }
    s.last_sent_ns = mono_ns();
    s.writer->request(s.head, body, false, [&, i](http_response& resp) {
      auto& sl = slots[i];
      if (!resp.ok()) {
        error("append_" + transport_kind(resp));
      } else if (!success_2xx(resp.status)) {
        error(fmt::format("append_status_{}", resp.status));
      } else {
        ++sl.appended;
        count("appends");
        ++interval_ops;
        append_h.record_ns(static_cast<std::uint64_t>(resp.done_ns - resp.sent_ns));
      }
      later(sl.last_sent_ns + interval_ns - mono_ns(), [&, i] { append(i); });
    });
  };
  rotate = [&](std::size_t i) {
    auto& s = slots[i];
    s.ready = false;
    s.head = format_request_head("DELETE", target.base(i), s.name, "", "", 0, false);
    s.writer->request(s.head, {}, false, [&, i](http_response& resp) {
      if (!resp.ok()) {
        error("delete_" + transport_kind(resp));
      } else if (!success_2xx(resp.status)) {
        error(fmt::format("delete_status_{}", resp.status));
      } else {
        count("streams_deleted");
      }
      ++slots[i].gen;
      create(i);
    });
  };

  // Catch-up readers: the whole stream from the start (one response), 20 ms apart, slot after slot.
  std::function<void(std::size_t)> read;
  read = [&](std::size_t k) {
    auto& rd = readers[k];
    const auto i = rd.next_slot++ % slots.size();
    if (!slots[i].ready) {
      later(20'000'000, [&, k] { read(k); });
      return;
    }
    rd.head = format_request_head("GET", target.read_base(k), slots[i].name, "offset=-1", "", 0, false);
    rd.conn->request(rd.head, {}, false, [&, k](http_response& resp) {
      if (!resp.ok()) {
        error("read_" + transport_kind(resp));
      } else if (resp.status == 404) {
        count("reads_of_deleted_streams");  // rotated between the check and the read
      } else if (resp.status != 200) {
        error(fmt::format("read_status_{}", resp.status));
      } else {
        count("reads");
        ++interval_ops;
        read_h.record_ns(static_cast<std::uint64_t>(resp.done_ns - resp.sent_ns));
      }
      later(20'000'000, [&, k] { read(k); });
    });
  };

  // Long-poll: follow the tail of the slot's current generation.
  std::function<void(std::size_t)> poll;
  poll = [&](std::size_t i) {
    auto& s = slots[i];
    if (!s.ready) {
      later(50'000'000, [&, i] { poll(i); });
      return;
    }
    if (s.poll_gen != s.gen) {
      s.poll_gen = s.gen;
      s.poll_offset = "-1";
    }
    s.poll_head = format_request_head("GET", target.read_base(i), s.name,
                                      "offset=" + s.poll_offset + "&live=long-poll", "", 0, false);
    s.poller->request(s.poll_head, {}, false, [&, i](http_response& resp) {
      auto& sl = slots[i];
      std::int64_t pause_ns = 0;
      if (!resp.ok()) {
        error("longpoll_" + transport_kind(resp));
        pause_ns = 1'000'000'000;
      } else if (resp.status == 200 || resp.status == 204) {
        count(resp.status == 200 ? "longpoll_data" : "longpoll_empty");
        ++interval_ops;
        if (!resp.next_offset.empty()) sl.poll_offset = resp.next_offset;
      } else if (resp.status == 404 || resp.status == 410) {
        count("longpolls_of_deleted_streams");
        sl.poll_gen = sl.gen + 1;  // start afresh on the next generation
        sl.poll_offset = "-1";
        pause_ns = 20'000'000;
      } else {
        error(fmt::format("longpoll_status_{}", resp.status));
        pause_ns = 1'000'000'000;
      }
      later(pause_ns, [&, i] { poll(i); });
    });
  };

  // SSE: a subscription to the slot's current generation; reconnects where it left off (5.8), or from
  // the start of the next generation.
  subscribe = [&](std::size_t i) {
    auto& s = slots[i];
    if (s.sse_open) return;
    if (!s.ready) {
      later(50'000'000, [&, i] { subscribe(i); });
      return;
    }
    if (s.sse_gen != s.gen) {
      s.sse_gen = s.gen;
      s.sse_offset = "-1";
    }
    s.parser = sse_event_parser{};
    s.sse_live = false;
    s.sse_open = true;
    s.sse_head = format_request_head("GET", target.read_base(i), s.name,
                                     "offset=" + s.sse_offset + "&live=sse", "", 0, false);
    s.sse->stream(s.sse_head, {.on_head =
                                   [&, i](const http_response& head) {
                                     auto& sl = slots[i];
                                     sl.sse_live = head.status == 200;
                                     if (head.status == 200) {
                                       count("sse_subscriptions");
                                     } else if (head.status == 404 || head.status == 410) {
                                       count("sse_of_deleted_streams");
                                     } else {
                                       error(fmt::format("sse_status_{}", head.status));
                                     }
                                   },
                               .on_data =
                                   [&, i](std::string_view bytes) {
                                     auto& sl = slots[i];
                                     if (!sl.sse_live) return;
                                     const bool ok = sl.parser.feed(bytes, [&](const sse_event& e) {
                                       if (e.type == "data") {
                                         count("sse_events");
                                       } else if (e.type == "control") {
                                         if (auto next = sse_control_next_offset(e.data); !next.empty())
                                           sl.sse_offset = std::move(next);
                                       }
                                     });
                                     if (!ok) {
                                       error("sse_parse");
                                       sl.sse_live = false;
                                     }
                                   },
                               .on_end =
                                   [&, i](http_response& resp) {
                                     auto& sl = slots[i];
                                     std::int64_t pause_ns = 0;
                                     if (!resp.ok() && resp.status == 0) {
                                       error("sse_" + transport_kind(resp));
                                       pause_ns = 1'000'000'000;
                                     } else if (resp.status == 404 || resp.status == 410) {
                                       sl.sse_gen = sl.gen + 1;
                                       pause_ns = 20'000'000;
                                     } else if (resp.status != 200) {
                                       pause_ns = 1'000'000'000;
                                     } else {
                                       // A clean end (the server's periodic close, or the stream was
                                       // deleted): go on.
                                       count("sse_reconnects");
                                       if (sl.sse_gen == sl.gen && !sl.ready) pause_ns = 20'000'000;
                                     }
                                     later(pause_ns, [&, i] { subscribe(i); });
                                   }});
  };

  // Stagger the writers over one interval so that appends do not arrive in bursts.
  for (std::size_t i = 0; i < slots.size(); ++i) {
    later(interval_ns * static_cast<std::int64_t>(i) / static_cast<std::int64_t>(slots.size()), [&, i] {
      create(i);
      poll(i);
      subscribe(i);
    });
  }
  for (std::size_t k = 0; k < readers.size(); ++k) later(50'000'000, [&, k] { read(k); });

  // Samples at every multiple of sample_secs; the last one at the end ends the run.
  const auto sample_ns = static_cast<std::int64_t>(cfg.sample_secs * 1e9);
  std::int64_t next_sample_ns = start_ns + sample_ns;
  std::int64_t last_sample_ns = start_ns;
  double last_cpu = process_cpu_seconds();
  // `nominal_s`: the sample's boundary (a multiple of sample_secs, the last at secs), so that the
  // samples of different targets share an x axis.
  auto take_sample = [&](std::int64_t now, double nominal_s) {
    soak_sample s;
    s.t_s = nominal_s;
    const auto p = sample_process(cfg.server_pid);
    s.rss_mib = p.rss_mib;
    s.fds = p.fds;
    if (append_h.count() > 0) s.append_p99_ms = append_h.percentile_ms(99);
    if (read_h.count() > 0) s.read_p99_ms = read_h.percentile_ms(99);
    const double wall = static_cast<double>(now - last_sample_ns) / 1e9;
    const double cpu = process_cpu_seconds();
    if (wall > 0) {
      s.ops_s = static_cast<double>(interval_ops) / wall;
      s.client_share = (cpu - last_cpu) / wall;
    }
    last_cpu = cpu;
    last_sample_ns = now;
    append_h.clear();
    read_h.clear();
    interval_ops = 0;
    r.samples.push_back(s);
    progress.done(
        fmt::format("{} soak t={} s: rss {} MiB, {} fds, append p99 {} ms, read p99 {} ms, {} ops/s, "
                    "client cpu {:.0f}%",
                    cfg.label, format_number(s.t_s), format_number(s.rss_mib), format_number(s.fds),
                    format_number(s.append_p99_ms), format_number(s.read_p99_ms), format_number(s.ops_s),
                    100 * s.client_share));
  };
  const auto req_timeout_ns = static_cast<std::int64_t>(cfg.request_timeout_ms) * 1'000'000;
  const auto poll_timeout_ns = static_cast<std::int64_t>(cfg.long_poll_timeout_ms) * 1'000'000;
  const auto bound = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.secs * 1000) + 10'000);
  driver.run(bound, [&] {
    const auto now = mono_ns();
    for (auto& s : slots) {
      s.writer->expire_if_older(now - req_timeout_ns);
      s.poller->expire_if_older(now - poll_timeout_ns);
    }
    for (auto& rd : readers) rd.conn->expire_if_older(now - req_timeout_ns);
    // The last sample is taken at the end even if the loop was late for a boundary before it.
    if (now >= end_ns) {
      take_sample(now, cfg.secs);
      stopping = true;
      driver.finish();
      return;
    }
    if (now >= next_sample_ns && next_sample_ns < end_ns - 1'000'000) {
      take_sample(now, std::round(static_cast<double>(next_sample_ns - start_ns) / 1e6) / 1e3);
      while (next_sample_ns <= now) next_sample_ns += sample_ns;  // a late loop skips, never doubles
    }
    progress.update(fmt::format("{} soak {:.0f}/{:.0f} s, {} appends, {} reads, {} errors", cfg.label,
                                static_cast<double>(now - start_ns) / 1e9, cfg.secs, r.counts["appends"],
                                r.counts["reads"], r.errors()));
  });
  stopping = true;
  r.cpu = driver.cpu();
  for (auto& s : slots) {
    s.writer->close();
    s.poller->close();
    s.sse->close();
  }
  for (auto& rd : readers) rd.conn->close();

  // Delete what is left (the current generation of every slot that has one), through the first base.
  std::vector<loop_worker> workers(1);
  workers[0].ep = target.base(0);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    workers[0].heads.push_back(
        format_request_head("DELETE", target.base(0), name_of(i, slots[i].gen), "", "", 0, false));
  }
  loop_config lc;
  lc.phase = "soak_delete";
  lc.label = cfg.label;
  lc.request_timeout_ms = cfg.request_timeout_ms;
  lc.max_requests_per_worker = workers[0].heads.size();
  lc.check = [](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
    // The last generation may not have been created (the run ended between delete and create).
    return success_2xx(resp.status) || resp.status == 404 ? "" : fmt::format("status_{}", resp.status);
  };
  run_result scratch;
  run_request_loop(workers, lc, scratch, progress);
  for (auto& [kind, n] : scratch.error_kinds) r.error_kinds[kind] += n;
  return r;
}

}  // namespace weir::bench

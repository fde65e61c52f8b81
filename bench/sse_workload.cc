#include "bench/sse_workload.h"

#include "bench/delivery_tracker.h"

#include <charconv>
#include <memory>

#include <fmt/format.h>

#include "client/http_connection.h"
#include "client/sse_event_parser.h"

namespace weir::bench {

// The HTTP client is weir_client (src/client), shared with `weir stream`.
using client::format_request_head;
using client::http_connection;
using client::http_response;
using client::mono_ns;
using client::sse_event;
using client::sse_event_parser;

std::string sse_event_payload(std::size_t stream, std::size_t index, std::size_t size) {
  std::string p = fmt::format("#{}:{};", stream, index);
  p.resize(std::max(size, p.size()), '.');
  return p;
}

bool parse_sse_event_tag(std::string_view payload, std::size_t& stream, std::size_t& index) {
  if (payload.empty() || payload[0] != '#') return false;
  const char* p = payload.data() + 1;
  const char* end = payload.data() + payload.size();
  auto r1 = std::from_chars(p, end, stream);
  if (r1.ec != std::errc{} || r1.ptr == end || *r1.ptr != ':') return false;
  auto r2 = std::from_chars(r1.ptr + 1, end, index);
  return r2.ec == std::errc{} && r2.ptr != end && *r2.ptr == ';';
}

std::string sse_control_next_offset(std::string_view control) {
  constexpr std::string_view key = "\"streamNextOffset\"";
  auto pos = control.find(key);
  if (pos == std::string_view::npos) return {};
  pos = control.find(':', pos + key.size());
  if (pos == std::string_view::npos) return {};
  pos = control.find('"', pos);
  if (pos == std::string_view::npos) return {};
  const auto end = control.find('"', pos + 1);
  if (end == std::string_view::npos) return {};
  return std::string(control.substr(pos + 1, end - pos - 1));
}

namespace {

struct reader {
  std::unique_ptr<http_connection> conn;
  std::size_t stream = 0;
  std::string head;
  sse_event_parser parser;
  std::size_t index = 0;  // in the delivery_tracker
  bool live = false;      // 200 and streaming
  bool ended = false;     // the server ended the stream or it failed
  bool opened = false;    // the first response head arrived (counted once, not per reconnect)
  const endpoint* ep = nullptr;
  std::string name;
  std::string offset;  // where to resume: the last control event's streamNextOffset
  unsigned reconnects = 0;
};

struct writer {
  std::unique_ptr<http_connection> conn;
  std::string head;
  std::vector<std::string> payloads;
  std::vector<std::int64_t> sent_ns;
  unsigned next = 0;
  std::int64_t last_sent_ns = 0;
  bool done = false;
};

}  // namespace

sse_outcome run_sse_workload(const target_spec& target, const std::vector<sse_stream>& streams,
                             const sse_config& cfg, run_result& result, progress_line& progress) {
  sse_outcome out;
  phase_driver driver;
  auto& loop = driver.loop();
  auto error = [&](std::string_view kind, std::uint64_t n = 1) {
    if (n) result.error_kinds[cfg.error_prefix + "." + std::string(kind)] += n;
  };

  std::vector<writer> writers(streams.size());
  std::vector<reader> readers;
  readers.reserve(streams.size() * cfg.readers_per_stream);
  for (std::size_t s = 0; s < streams.size(); ++s) {
    auto& w = writers[s];
    // Stream s's writer on base s (as the seed created it there); its readers spread over every read base.
    w.conn = std::make_unique<http_connection>(loop, target.base(s));
    w.head = format_request_head("POST", target.base(s), streams[s].name, "", "text/plain", cfg.payload_bytes,
                                 true);
    for (unsigned k = 0; k < cfg.event_count; ++k)
      w.payloads.push_back(sse_event_payload(s, k, cfg.payload_bytes));
    w.sent_ns.assign(cfg.event_count, 0);
    for (unsigned r = 0; r < cfg.readers_per_stream; ++r) {
      const auto& ep = target.read_base(readers.size());
      reader rd;
      rd.conn = std::make_unique<http_connection>(loop, ep);
      rd.stream = s;
      rd.ep = &ep;
      rd.name = streams[s].name;
      rd.offset = streams[s].start_offset;
      rd.index = readers.size();
      readers.push_back(std::move(rd));
    }
  }
  delivery_tracker tracker(readers.size(), cfg.event_count);
  out.expected = tracker.expected();

  // A data event holds one or more whole payloads (servers may batch appends into one event).
  auto on_data_event = [&](reader& rd, std::string_view data, std::int64_t now) {
    if (data.empty() || data.size() % cfg.payload_bytes != 0) {
      error("framing");
      return;
    }
    for (std::size_t off = 0; off < data.size(); off += cfg.payload_bytes) {
      std::size_t s = 0, k = 0;
      if (!parse_sse_event_tag(data.substr(off, cfg.payload_bytes), s, k)) {
        error("bad_event");
        continue;
      }
      if (s != rd.stream) {
        error("wrong_stream");
        continue;
      }
      const auto v = tracker.record(rd.index, k);
      if (v == delivery_tracker::verdict::out_of_range) {
        error("bad_event");
        continue;
      }
      if (v == delivery_tracker::verdict::duplicate) {
        error("duplicate");
        continue;
      }
      ++out.delivered;
      const auto sent = writers[s].sent_ns[k];
      if (sent > 0 && now >= sent) out.latency.record_ns(static_cast<std::uint64_t>(now - sent));
    }
  };

  std::size_t pending_heads = readers.size();
  bool writers_started = false;
  std::function<void(std::size_t)> append_next;
  auto start_writers = [&] {
    if (writers_started) return;
    writers_started = true;
    for (std::size_t s = 0; s < writers.size(); ++s) append_next(s);
  };
  append_next = [&](std::size_t s) {
    auto& w = writers[s];
    if (w.next >= cfg.event_count) {
      w.done = true;
      return;
    }
    const unsigned k = w.next++;
    const auto now = mono_ns();
    w.sent_ns[k] = now;
    w.last_sent_ns = now;
    w.conn->request(w.head, w.payloads[k], false, [&, s](http_response& r) {
      if (!r.ok()) {
        error(r.error == "timeout" ? "append_timeout" : "append_transport");
      } else if (r.status != 204 && r.status != 200) {
        error(fmt::format("append_status_{}", r.status));
      }
      auto& wr = writers[s];
      const auto due = wr.last_sent_ns + static_cast<std::int64_t>(cfg.interval_ms) * 1'000'000;
      const auto wait_ms = (due - mono_ns() + 999'999) / 1'000'000;
      if (wait_ms > 0) {
        loop.add_timer(std::chrono::milliseconds(wait_ms), [&append_next, s] { append_next(s); });
      } else {
        append_next(s);
      }
    });
  };

  // A server SHOULD end an SSE response about every 60 s (PROTOCOL.md 10.2) and the client MUST then
  // reconnect from the last streamNextOffset (5.8): a clean end is a reconnect, not an error.
  bool finishing = false;
  constexpr unsigned max_reconnects = 1000;
  std::function<void(reader*)> open;
  open = [&](reader* p) {
    p->head = format_request_head("GET", *p->ep, p->name, "offset=" + p->offset + "&live=sse", "", 0, false);
    p->parser = sse_event_parser{};
    p->conn->stream(p->head, {.on_head =
                                  [&, p](const http_response& head) {
                                    if (head.status == 200) {
                                      p->live = true;
                                    } else {
                                      p->live = false;
                                      error(fmt::format("status_{}", head.status));
                                    }
                                    if (!p->opened) {
                                      p->opened = true;
                                      if (--pending_heads == 0) start_writers();
                                    }
                                  },
                              .on_data =
                                  [&, p](std::string_view bytes) {
                                    if (!p->live) return;
                                    const auto now = mono_ns();
                                    if (!p->parser.feed(bytes, [&](const sse_event& e) {
                                          if (e.type == "data") {
                                            on_data_event(*p, e.data, now);
                                          } else if (e.type == "control") {
                                            if (auto next = sse_control_next_offset(e.data); !next.empty())
                                              p->offset = std::move(next);
                                          }
                                        })) {
                                      error("parse");
                                      p->ended = true;
                                      p->conn->close();
                                    }
                                  },
                              .on_end =
                                  [&, p](http_response& r) {
                                    if (r.status == 0) {  // no head: the subscription never opened
                                      p->ended = true;
                                      error(r.error == "timeout" ? "timeout" : "connect");
                                      if (!p->opened) {
                                        p->opened = true;
                                        if (--pending_heads == 0) start_writers();
                                      }
                                      return;
                                    }
                                    if (tracker.complete(p->index) || finishing) {
                                      p->ended = true;
                                      return;
                                    }
                                    if (r.ok() && r.status == 200 && p->reconnects < max_reconnects) {
                                      ++p->reconnects;
                                      ++result.counts["sse_reconnects"];
                                      open(p);
                                      return;
                                    }
                                    p->ended = true;
                                    error("closed");  // failed before every event arrived
                                  }});
  };
  for (auto& rd : readers) open(&rd);

  const auto start_ns = mono_ns();
  const auto request_timeout_ns = static_cast<std::int64_t>(cfg.request_timeout_ms) * 1'000'000;
  const auto delivery_timeout_ns = static_cast<std::int64_t>(cfg.delivery_timeout_ms) * 1'000'000;
  const auto bound =
      std::chrono::milliseconds(cfg.request_timeout_ms * 2 + cfg.delivery_timeout_ms +
                                cfg.event_count * (cfg.interval_ms + cfg.request_timeout_ms) + 5000);
  bool stuck_heads = false;
  driver.run(bound, [&] {
    const auto now = mono_ns();
    for (auto& w : writers) w.conn->expire_if_older(now - request_timeout_ns);
    if (!writers_started && now - start_ns > request_timeout_ns) {
      stuck_heads = true;  // some subscriptions never answered: measure the ones that did
      start_writers();
    }
    bool all_written = writers_started;
    std::int64_t last_sent = 0;
    for (auto& w : writers) {
      all_written = all_written && w.done && !w.conn->busy();
      last_sent = std::max(last_sent, w.last_sent_ns);
    }
    bool all_delivered = true;
    for (auto& rd : readers) all_delivered = all_delivered && (rd.ended || tracker.complete(rd.index));
    progress.update(fmt::format("{} sse {:.0f} s, {}/{} events delivered", cfg.label,
                                static_cast<double>(now - start_ns) / 1e9, out.delivered, out.expected));
    if (all_written && (all_delivered || now - last_sent > delivery_timeout_ns)) {
      finishing = true;
      driver.finish();
    }
  });
  for (auto& rd : readers) {
    if (!rd.live && !rd.ended && stuck_heads) error("timeout");
    error("missing", cfg.event_count - tracker.received(rd.index));
    rd.conn->close();
  }
  for (auto& w : writers) {
    if (w.next < cfg.event_count) error("append_unsent", cfg.event_count - w.next);
    w.conn->close();
  }
  out.lost = tracker.lost();
  out.duplicated = tracker.duplicated();
  out.cpu = driver.cpu();
  return out;
}

}  // namespace weir::bench

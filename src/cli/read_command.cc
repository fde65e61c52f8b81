// `weir stream read`: catch-up reads from an offset to the tail (PROTOCOL.md 5.6), or with --follow an
// SSE live tail (5.8) that survives server restarts: it prints a batch only together with the offset
// that follows it (sse_batch_reader), and reconnects from the last offset it printed, so that nothing is
// lost or printed twice.
#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli/command_context.h"
#include "cli/content_kind.h"
#include "cli/output_format.h"
#include "cli/sse_batch_reader.h"

namespace weir::cli {
namespace {

content_kind kind_of(const client::http_response& r) {
  const auto* ct = r.header("content-type");
  return classify_content_type(ct ? std::string_view(*ct) : std::string_view("application/octet-stream"));
}

std::string offset_query(std::string_view offset) {
  return "offset=" + percent_encode(offset, false);
}

// Fills `b` from one piece of stream data (a catch-up body or an SSE data event).
status add_data(read_batch& b, std::string_view data) {
  if (b.kind != content_kind::json) {
    b.data.append(data);
    return {};
  }
  if (data.empty()) return {};
  auto messages = json_array_messages(data);
  if (!messages) return messages.err();
  for (auto& m : *messages) b.messages.push_back(std::move(m));
  return {};
}

exit_code read_to_tail(command_context& ctx) {
  std::string offset = ctx.args.offset;
  while (true) {
    const auto r = ctx.send({.method = "GET", .query = offset_query(offset)});
    if (!r.ok() || r.status != 200) return ctx.fail(r);
    read_batch b;
    b.kind = kind_of(r);
    if (auto s = add_data(b, r.body); !s) return ctx.fail(exit_code::failure, s.err().reason);
    b.next_offset = r.next_offset;
    b.up_to_date = header_is_true(r, "stream-up-to-date");
    b.closed = header_is_true(r, "stream-closed");
    ctx.print(format_read_batch(b, ctx.args.json));
    // PROTOCOL.md 5.6: Stream-Up-To-Date marks the tail; without it more data follows at the next offset.
    if (b.up_to_date || b.closed || r.next_offset.empty() || r.next_offset == offset) return exit_code::ok;
    offset = r.next_offset;
  }
}

// A live SSE connection carries a keep-alive comment at least every 15 s by default (weir serve
// --sse-keep-alive-ms); one silent for 60 s is taken for dead and replaced (losslessly, from the last
// offset printed).
constexpr unsigned sse_idle_timeout_ms = 60'000;

bool retryable(int status) {
  return status == 429 || status >= 500;
}

// Waits between reconnection attempts: 100 ms, doubling up to 2 s; reset once a connection works.
class backoff {
 public:
  void wait() {
    std::this_thread::sleep_for(delay_);
    delay_ = std::min(delay_ * 2, std::chrono::milliseconds(2000));
  }
  void reset() { delay_ = std::chrono::milliseconds(100); }

 private:
  std::chrono::milliseconds delay_{100};
};

exit_code follow(command_context& ctx) {
  std::string offset = ctx.args.offset;
  std::optional<content_kind> kind;
  backoff pause;
  bool outage = false;
  auto retry = [&](std::string_view why) {
    if (!outage) {
      std::fputs(
          fmt::format("weir stream read {}: {}; retrying from offset {}\n", ctx.target.path, why, offset)
              .c_str(),
          ctx.err);
      std::fflush(ctx.err);
      outage = true;
    }
    pause.wait();
  };

  while (true) {
    if (!kind) {
      // The stream's content type decides how batches print (SSE does not carry it); HEAD also resolves
      // "now" to a real offset, so that a reconnection cannot skip what arrived in between.
      const auto h = ctx.send({.method = "HEAD"});
      if (!h.ok()) {
        retry(h.error);
        continue;
      }
      if (retryable(h.status)) {
        retry(fmt::format("HTTP {}", h.status));
        continue;
      }
      if (h.status != 200) return ctx.fail(h);
      kind = kind_of(h);
      if (offset == "now") offset = h.next_offset;
    }

    int status = 0;
    bool closed = false;
    bool got_batch = false;
    std::string error_body, protocol_error;
    std::optional<sse_batch_reader> reader;
    const auto head = format_head(ctx.target, {.method = "GET", .query = offset_query(offset) + "&live=sse"});
    sync_connection::stream_handlers handlers;
    handlers.on_head = [&](const client::http_response& r) {
      status = r.status;
      if (status == 200) {
        const auto* enc = r.header("stream-sse-data-encoding");
        reader.emplace(enc != nullptr && *enc == "base64");
        pause.reset();
        if (outage) {
          std::fputs(
              fmt::format("weir stream read {}: reconnected at offset {}\n", ctx.target.path, offset).c_str(),
              ctx.err);
          std::fflush(ctx.err);
          outage = false;
        }
      }
      return true;
    };
    handlers.on_data = [&](std::string_view data) {
      if (status != 200) {
        if (error_body.size() < 1000) error_body.append(data.substr(0, 1000 - error_body.size()));
        return true;
      }
      auto s = reader->feed(data, [&](sse_batch& sb) {
        read_batch b;
        b.kind = *kind;
        for (const auto& e : sb.events) {
          if (auto added = add_data(b, e); !added && protocol_error.empty())
            protocol_error = added.err().reason;
        }
        if (!protocol_error.empty()) return;  // print nothing of a batch that cannot be printed whole
        got_batch = true;
        b.next_offset = sb.next_offset;
        b.up_to_date = sb.up_to_date;
        b.closed = sb.closed;
        if (!sb.events.empty() || sb.closed || ctx.args.json) ctx.print(format_read_batch(b, ctx.args.json));
        offset = sb.next_offset;
        if (sb.closed) closed = true;
      });
      if (!s && protocol_error.empty()) protocol_error = s.err().reason;
      return protocol_error.empty() && !closed;
    };
    auto r = ctx.conn.stream(head, std::move(handlers), ctx.args.timeout_ms, sse_idle_timeout_ms);

    // PROTOCOL.md 5.8: after streamClosed the client must not reconnect.
    if (closed) return exit_code::ok;
    if (!protocol_error.empty()) return ctx.fail(exit_code::failure, protocol_error);
    if (status == 200) {
      // The server ended the response (it does so every so often, PROTOCOL.md 5.8) or the connection
      // broke (a restart): either way, carry on from the last offset printed.
      if (!r.ok()) {
        retry(r.error);
      } else if (!got_batch) {
        pause.wait();  // a server that ends every response at once is not asked again in a tight loop
      }
      continue;
    }
    if (!r.ok()) {
      retry(r.error);
      continue;
    }
    if (retryable(status)) {
      retry(fmt::format("HTTP {}", status));
      continue;
    }
    r.body = error_body;
    return ctx.fail(r);
  }
}

}  // namespace

exit_code run_read(command_context& ctx) {
  return ctx.args.follow ? follow(ctx) : read_to_tail(ctx);
}

}  // namespace weir::cli

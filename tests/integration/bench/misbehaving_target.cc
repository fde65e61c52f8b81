#include "misbehaving_target.h"

#include <map>
#include <string>
#include <vector>

#include "base/assert.h"

namespace weir::bench_test {

struct misbehaving_target::state {
  struct stream {
    std::uint64_t bytes = 0;
    std::uint64_t appends = 0;
    std::vector<http::exchange> subscribers;
  };
  std::map<std::string, stream> streams;
  std::uint64_t reads = 0;

  void handle(const http::request& req, http::exchange ex) {
    const std::string path(req.path());
    const std::string query(req.query());
    auto& s = streams[path];
    const std::string offset = std::to_string(s.bytes);
    switch (req.method()) {
      case http::method::put: {
        const http::header h[] = {{"Stream-Next-Offset", "0"}, {"Content-Type", "text/plain"}};
        ex.respond(201, h, {});
        return;
      }
      case http::method::post: {
        s.bytes += req.body.size();
        ++s.appends;
        const std::string next = std::to_string(s.bytes);
        if (s.appends % 2 == 1) {  // the even-numbered appends never reach a subscriber
          const std::string event = "event: data\ndata: " + std::string(req.body) +
                                    "\n\nevent: control\ndata: {\"streamNextOffset\":\"" + next + "\"}\n\n";
          // ... and appends 1, 5, 9, ... reach them twice.
          const int copies = s.appends % 4 == 1 ? 2 : 1;
          for (auto& sub : s.subscribers) {
            if (!sub.alive()) continue;
            for (int i = 0; i < copies; ++i) sub.write(event);
            sub.flush();
          }
        }
        const http::header h[] = {{"Stream-Next-Offset", next}};
        ex.respond(204, h, {});
        return;
      }
      case http::method::del:
        streams.erase(path);
        ex.respond(204, {}, {});
        return;
      case http::method::get: {
        if (query.find("live=sse") != std::string::npos) {
          const http::header h[] = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
          ex.begin_stream(200, h);
          ex.write("event: control\ndata: {\"streamNextOffset\":\"" + offset + "\",\"upToDate\":true}\n\n");
          ex.flush();
          s.subscribers.push_back(ex);
          return;
        }
        const http::header h[] = {{"Content-Type", "application/octet-stream"},
                                  {"Stream-Next-Offset", "end"},
                                  {"Stream-Up-To-Date", "true"}};
        if (query.find("offset=-1") == std::string::npos) {  // the tail: nothing more
          ex.respond(200, h, {});
          return;
        }
        const std::uint64_t size = ++reads % 2 == 0 ? s.bytes : s.bytes / 2;
        ex.respond(200, h, std::string(size, 'r'));
        return;
      }
      default:
        ex.respond(405, {}, {});
    }
  }
};

misbehaving_target::misbehaving_target() : state_(std::make_unique<state>()) {
  http::server_options opts;
  opts.port = 0;
  opts.threads = 1;
  opts.drain_timeout = std::chrono::milliseconds(500);
  server_ = std::make_unique<http::server>(
      opts,
      [s = state_.get()](const http::request& req, http::exchange ex) { s->handle(req, std::move(ex)); });
  auto started = server_->start();
  WEIR_ASSERT(started.has_value(), "misbehaving_target: {}", started.err().reason);
  thread_ = std::thread([this] { server_->run(); });
}

misbehaving_target::~misbehaving_target() {
  server_->stop();
  thread_.join();
}

std::uint16_t misbehaving_target::port() const {
  return server_->port();
}

}  // namespace weir::bench_test

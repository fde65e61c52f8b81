// weir-techempower: GET /plaintext and GET /json per the TechEmpower Framework Benchmarks rules
// (headers Server, Date, Content-Type, Content-Length; the JSON object serialised for every request).
// Nothing here allocates per request: the answer is built in stack buffers and copied once into the
// connection's output buffer.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "http/server.h"
#include "io/event_loop.h"
#include "io/signal_watcher.h"
#include "io/socket.h"

namespace {

using weir::http::header;

// A tiny JSON writer for {"message": "..."}: the TechEmpower rules ask for a serialisation per request,
// not a precomputed string.
std::size_t write_json_message(char* out, std::size_t cap, std::string_view message) {
  std::size_t n = 0;
  auto put = [&](std::string_view s) {
    if (n + s.size() <= cap) std::memcpy(out + n, s.data(), s.size());
    n += s.size();
  };
  put("{\"message\":\"");
  for (char c : message) {
    switch (c) {
      case '"':
        put("\\\"");
        break;
      case '\\':
        put("\\\\");
        break;
      case '\n':
        put("\\n");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[7];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          put(esc);
        } else {
          put(std::string_view(&c, 1));
        }
    }
  }
  put("\"}");
  return n;
}

void handle(const weir::http::request& req, weir::http::exchange ex) {
  static constexpr header text[] = {{"Content-Type", "text/plain"}};
  static constexpr header json[] = {{"Content-Type", "application/json"}};
  if (req.method() == weir::http::method::get || req.method() == weir::http::method::head) {
    if (req.path() == "/plaintext") {
      ex.respond(200, text, "Hello, World!");
      return;
    }
    if (req.path() == "/json") {
      char buf[128];
      std::size_t n = write_json_message(buf, sizeof buf, "Hello, World!");
      ex.respond(200, json, std::string_view(buf, n));
      return;
    }
  }
  ex.respond(404, text, "not found\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"weir-techempower: the weir HTTP engine answering /plaintext and /json"};
  std::string listen = "127.0.0.1:8080";
  unsigned threads = 1;
  bool pin = false;
  app.add_option("--listen", listen, "HOST:PORT to listen on");
  app.add_option("--threads", threads, "event loops (one per core)")->check(CLI::Range(1u, 256u));
  app.add_flag("--pin", pin, "pin loop i to CPU i");
  CLI11_PARSE(app, argc, argv);

  auto hp = weir::io::parse_host_port(listen);
  if (!hp) {
    std::fprintf(stderr, "weir-techempower: %s\n", hp.err().reason.c_str());
    return 2;
  }
  weir::io::signal_watcher::block_termination_signals();
  weir::http::server_options opts;
  opts.host = hp->host;
  opts.port = hp->port;
  opts.threads = threads;
  opts.pin_cpus = pin;
  weir::http::server srv(opts, handle);
  if (auto st = srv.start(); !st) {
    std::fprintf(stderr, "weir-techempower: %s\n", st.err().reason.c_str());
    return 1;
  }
  std::fprintf(stderr, "weir-techempower: listening on %s:%u with %u thread(s)\n", opts.host.c_str(),
               srv.port(), srv.threads());
  weir::io::signal_watcher watcher([&srv](int) { srv.stop(); });
  srv.run();
  return 0;
}

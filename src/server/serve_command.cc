// `weir serve`: run a node. Settings come from defaults, then --config FILE (TOML), then flags.
#include "server/serve_command.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "base/log.h"
#include "io/signal_watcher.h"
#include "server/node.h"
#include "server/serve_config.h"

namespace weir::server {

namespace {
struct serve_flags {
  std::string listen;
  std::string data_dir;
  std::string config;
  std::string log_level;
  unsigned threads = 0;
  std::int64_t long_poll_timeout_ms = 0;
  std::uint64_t body_limit = 0;
  std::string fsync;
  std::uint64_t hot_bytes = 0;
  std::optional<std::uint64_t> checkpoint_bytes;
  std::uint64_t max_in_flight_bytes = 0;
  std::uint64_t segment_bytes = 0;
};
}  // namespace

void register_command(CLI::App& app) {
  auto flags = std::make_shared<serve_flags>();
  auto* cmd = app.add_subcommand("serve", "Run a weir node (Durable Streams over HTTP/1.1)");
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (default 127.0.0.1:4437)");
  cmd->add_option("--data-dir", flags->data_dir, "Data directory (default ./weir-data)");
  cmd->add_option("--threads", flags->threads, "Event loops / cores (default: one per CPU, at most 4)");
  cmd->add_option("--long-poll-timeout-ms", flags->long_poll_timeout_ms, "Long-poll timeout (default 30000)");
  cmd->add_option("--body-limit", flags->body_limit, "Largest request body in bytes (default 64 MiB)");
  cmd->add_option("--fsync", flags->fsync,
                  "When appends are acknowledged: always (after fdatasync, default), interval:MS or never");
  cmd->add_option(
      "--hot-bytes", flags->hot_bytes,
      "Stream data kept in memory, all cores together (default 256 MiB); the rest is read from disk");
  cmd->add_option("--segment-bytes", flags->segment_bytes,
                  "Size at which a log segment file is rolled (default 128 MiB)");
  cmd->add_option("--checkpoint-bytes", flags->checkpoint_bytes,
                  "Log growth per core between checkpoints (default 256 MiB; 0: never)");
  cmd->add_option("--max-in-flight-bytes", flags->max_in_flight_bytes,
                  "Writes per core waiting for the disk before 503 + Retry-After (default 256 MiB)");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error or off");
  cmd->add_option("--config", flags->config, "TOML file with the same settings (flags override it)");
  cmd->callback([flags] {
    serve_config cfg;
    try {
      if (!flags->config.empty()) load_config_file(cfg, flags->config);
      if (!flags->listen.empty()) apply_listen(cfg, flags->listen);
      if (!flags->data_dir.empty()) cfg.data_dir = flags->data_dir;
      if (flags->threads != 0) cfg.threads = flags->threads;
      if (flags->long_poll_timeout_ms != 0) cfg.long_poll_timeout_ms = flags->long_poll_timeout_ms;
      if (flags->body_limit != 0) cfg.body_limit = flags->body_limit;
      if (!flags->log_level.empty()) cfg.log_level = flags->log_level;
      if (!flags->fsync.empty()) cfg.fsync = flags->fsync;
      if (flags->hot_bytes != 0) cfg.hot_bytes = flags->hot_bytes;
      if (flags->segment_bytes != 0) cfg.segment_bytes = flags->segment_bytes;
      if (flags->checkpoint_bytes) cfg.checkpoint_bytes = *flags->checkpoint_bytes;
      if (flags->max_in_flight_bytes != 0) cfg.max_in_flight_bytes = flags->max_in_flight_bytes;
      if (cfg.threads == 0) cfg.threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
      validate(cfg);
    } catch (const config_error& e) {
      std::fprintf(stderr, "weir serve: %s\n", e.what());
      std::exit(2);
    }
    log::set_level(cfg.log_level);
    // Before any thread exists (the subscription service starts some): every thread inherits the mask
    // and SIGTERM/SIGINT reach only the signal watcher.
    io::signal_watcher::block_termination_signals();
    int code = 0;
    {
      node n(std::move(cfg));
      if (status st = n.start(); !st) {
        log::error("weir serve: {}", st.err().reason);
        code = 1;
      } else {
        n.run(true);
      }
    }
    std::exit(code);
  });
}

}  // namespace weir::server

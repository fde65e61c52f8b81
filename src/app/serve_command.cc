// `weir serve`: run a node. Settings come from defaults, then --config FILE (TOML), then flags; every
// setting of serve_config.cc's table is a flag of the same name.
#include "app/serve_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "app/settings.h"
#include "auth/listen_policy.h"
#include "base/log.h"
#include "io/signal_watcher.h"
#include "server/node.h"

namespace weir::app {

serve_options::serve_options(CLI::App& cmd) : values_(settings().size()) {
  const serve_config defaults;
  for (std::size_t i = 0; i < settings().size(); ++i) {
    const setting& s = settings()[i];
    if (s.secret) {  // settings file only
      options_.push_back(nullptr);
      continue;
    }
    auto* opt = cmd.add_option("--" + std::string(s.name), values_[i], std::string(s.help));
    opt->type_name(std::string(s.value_name));
    setting_value d = s.access.get(defaults);
    auto* text = std::get_if<std::string>(&d);
    opt->default_str(text ? *text : to_toml_value(d));
    // A boolean alone means true (`--insecure-no-auth`), and it still takes a value
    // (`--durable false`). CLI11 2.1 gives a bare option "true" only when it is "flag-like", which
    // expected(0) sets and expected(0, 1) keeps.
    if (s.access.kind == setting_kind::boolean) opt->expected(0)->expected(0, 1);
    options_.push_back(opt);
  }
  cmd.add_option("--config", config_, "TOML file with the same settings, `name = value` (flags override it)");
  cmd.add_flag("--print-config", print_config_,
               "Print the effective configuration as TOML (for --config) and exit");
}

serve_config serve_options::resolve() const {
  serve_config cfg;
  if (!config_.empty()) load_config_file(cfg, config_);
  for (std::size_t i = 0; i < settings().size(); ++i) {
    if (options_[i] && options_[i]->count() > 0) apply_flag(cfg, settings()[i], values_[i]);
  }
  if (cfg.threads == 0) cfg.threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  validate(cfg);
  return cfg;
}

void register_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Run a weir node (Durable Streams over HTTP/1.1)");
  auto opts = std::make_shared<serve_options>(*cmd);
  cmd->callback([opts] {
    serve_config cfg;
    try {
      cfg = opts->resolve();
    } catch (const config_error& e) {
      std::fprintf(stderr, "weir serve: %s\n", e.what());
      std::exit(2);
    }
    if (opts->print_config()) {
      std::fputs(print_config(cfg).c_str(), stdout);
      std::exit(0);
    }
    log::set_level(cfg.log_level);
    log::set_format(cfg.log_format);
    // Before any thread exists (the subscription service starts some): every thread inherits the mask
    // and SIGTERM/SIGINT reach only the signal watcher.
    io::signal_watcher::block_termination_signals();
    // Before the node exists (its constructor prepares the data directory): a node that may not run
    // without access control touches nothing (node::start() checks the same for other callers).
    const bool auth_on = !cfg.api_keys.empty() || !cfg.jwks_file.empty();
    if (std::string why = auth::listen_refusal(cfg.host, auth_on, cfg.insecure_no_auth); !why.empty()) {
      log::error("weir serve: {}", why);
      std::exit(1);
    }
    int code = 0;
    {
      server::node n(std::move(cfg));
      if (status st = n.start(); !st) {
        log::error("weir serve: {}", st.err().reason);
        code = 1;
      } else {
        n.run(true);
        code = n.exit_code();
      }
    }
    std::exit(code);
  });
}

}  // namespace weir::app

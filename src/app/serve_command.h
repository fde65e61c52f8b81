// `weir serve`: registers the subcommand on the weir CLI.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "app/settings.h"

namespace weir::app {

void register_command(CLI::App& app);

// The options of `weir serve` on `cmd`: one flag per setting (serve_config.cc's table), --config and
// --print-config. After cmd has parsed its arguments, resolve() gives the effective configuration.
class serve_options {
 public:
  explicit serve_options(CLI::App& cmd);

  // Defaults, then the --config file, then the flags given (whatever their order); threads 0 resolved
  // to the CPU count (at most 4); validated. Throws config_error naming the setting.
  serve_config resolve() const;
  bool print_config() const { return print_config_; }

 private:
  std::string config_;
  bool print_config_ = false;
  std::vector<std::string> values_;  // one text per setting, parsed by apply_flag when given
  std::vector<CLI::Option*> options_;
};

}  // namespace weir::app

// settings: the settings of `weir serve`, from defaults, an optional TOML file and flags (flags win).
// Every setting is one row of settings() (settings.cc): its dash-form name is both the flag
// (`--data-dir`) and the TOML key (`data-dir = ...`), and the same row gives its help text, its range
// check and its place in `weir serve --print-config`. A new field of server::serve_config gets a row
// there; the unit test (tests/unit/app/settings_test.cc) checks that every row reads and prints its own
// field. Invalid or unknown settings are start-up errors (exceptions are allowed in config, STYLE.md).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include "server/serve_config.h"

namespace weir::app {

using server::serve_config;

struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A setting's value as the flag parser and the TOML reader hand it over: TOML boolean, non-negative
// integer or string.
using setting_value = std::variant<bool, std::uint64_t, std::string>;

enum class setting_kind { boolean, integer, text };

// How a row reads and writes its serve_config member (made by the table's `field<&serve_config::x>`).
struct setting_access {
  setting_kind kind;
  std::uint64_t type_max;  // integers: the largest value the member can hold
  setting_value (*get)(const serve_config&);
  void (*set)(serve_config&, const setting_value&);  // may throw config_error (listen)
};

// One setting: a row of the table.
struct setting {
  std::string_view name;        // dash form: the flag `--name` and the TOML key `name`
  std::string_view value_name;  // in --help: N, TEXT, true|false, HOST:PORT...
  std::string_view help;
  setting_access access;
  std::uint64_t min = 0;  // integers: inclusive range (further limited by the member's type)
  std::uint64_t max = UINT64_MAX;
  // Checks beyond the range (choices, forms, other settings): "" or what is wrong.
  std::string (*check)(const serve_config&) = nullptr;
  // A secret (a credential): read from the settings file only, never a flag (command lines are visible
  // to every user of the machine), and never printed (--print-config shows whether it is set).
  bool secret = false;
};

// Every setting of `weir serve`, in --help and --print-config order.
std::span<const setting> settings();

// The row named `name`, in dash form or in the old underscore form (`data_dir`); nullptr if none.
const setting* find_setting(std::string_view name);

// "HOST:PORT" (IPv4 host, or [IPv6]:PORT).
void apply_listen(serve_config& c, const std::string& listen);

// Sets one setting from a flag's text ("2", "true", "./data"); errors name the setting.
void apply_flag(serve_config& c, const setting& s, std::string_view text);

// Reads a TOML file (or text) into `c`: `name = value` for any row of settings(); the old underscore
// keys (`data_dir`) are accepted too. Unknown keys and values of the wrong type are errors. The one
// table besides the rows is `[[auth.api-keys]]` (name, hash, scope; docs/security.md).
void load_config_file(serve_config& c, const std::string& path);
void load_config_text(serve_config& c, std::string_view toml_text, const std::string& source = "config");

// The configuration as TOML that load_config_file accepts, one commented line per setting, then the
// [[auth.api-keys]] tables. Secret settings are printed as comments that say whether they are set.
std::string print_config(const serve_config& c);

// A setting's value as TOML (`"./weir-data"`, `30000`, `true`).
std::string to_toml_value(const setting_value& v);

// Range and consistency checks of the final configuration; the error names the setting.
void validate(const serve_config& c);

}  // namespace weir::app

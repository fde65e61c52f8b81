#include "auth/auth_command.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "auth/api_key.h"
#include "auth/crypto.h"

namespace weir::auth {

void register_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("auth", "Access-control helpers (docs/security.md)");
  cmd->require_subcommand(1);
  auto* gen =
      cmd->add_subcommand("gen-key", "Print a new random API key and the [[auth.api-keys]] block for it");
  gen->callback([] {
    const std::string key = generate_api_key();
    std::printf(
        "# The key (give it to the client; weir keeps only its hash):\n%s\n\n"
        "# For the config file (edit the scope):\n"
        "[[auth.api-keys]]\nname = \"client\"\nhash = \"%s\"\n"
        "scope = [{ prefix = \"/v1/stream/\", ops = [\"read\", \"write\"] }]\n",
        key.c_str(), to_hex(sha256(key)).c_str());
    std::exit(0);
  });
  auto* hash = cmd->add_subcommand(
      "hash-key", "Read an API key on standard input (one line) and print its SHA-256 (hex) for the config");
  hash->callback([] {
    std::string key;
    std::getline(std::cin, key);
    if (!key.empty() && key.back() == '\r') key.pop_back();
    if (key.empty()) {
      std::fputs("weir auth hash-key: no key on standard input\n", stderr);
      std::exit(2);
    }
    std::printf("%s\n", to_hex(sha256(key)).c_str());
    std::exit(0);
  });
}

}  // namespace weir::auth

#pragma once

#include "cli/cli11_fwd.hpp"
#include "cli/mentioned_options.hpp"
#include "cli/output_settings.hpp"

#include <optional>
#include <string>

namespace ratelimit::cli {

// The options that every command takes, before or after the command name, as typed: nothing
// when not given. What they mean once the environment and the configuration files have had
// their say is resolve_store_settings's to tell (settings.hpp).
struct GlobalOptions {
  OutputSettings output;                     // --json, -q, -E
  std::optional<std::string> db;             // --db PATH
  std::optional<std::string> store;          // --store URL
  std::optional<std::string> on_store_error; // --on-store-error deny|allow|local
  std::optional<std::string> lock_timeout;   // --lock-timeout DURATION
  std::optional<std::string> store_timeout;  // --store-timeout DURATION
  std::optional<std::string> redis_prefix;   // --redis-prefix PREFIX
  std::optional<std::string> store_ca;       // --store-ca FILE
  std::optional<std::string> store_cert;     // --store-cert FILE
  std::optional<std::string> store_key;      // --store-key FILE
  std::optional<std::string> config;         // --config FILE
};

void add_global_options(CLI::App& app, GlobalOptions& options, const MentionedOptions& mentioned);

} // namespace ratelimit::cli

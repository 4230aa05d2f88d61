#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/limit_options.hpp"
#include "cli/pause.hpp"
#include "cli/usage_error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

namespace ratelimit::cli {

namespace {

struct PauseOptions {
  std::string key;
  std::string duration;
  int given = 0; // how many of KEY and DURATION the command line gave
};

int run_pause(const PauseOptions& options, bool json, StoreOpener& stores) {
  if (options.given < 2) {
    throw UsageError(fmt::format("a {} is required; expected ratelimit pause KEY DURATION, e.g. "
                                 "ratelimit pause api 30s",
                                 options.given == 0 ? "KEY" : "DURATION"));
  }
  check_key(options.key);
  auto duration = core::parse_duration(options.duration);
  if (!duration) {
    throw UsageError(duration.error());
  }
  pause_key(json, *stores.open(), options.key, *duration);
  return k_exit_granted;
}

} // namespace

CommandRun setup_pause(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  auto options = std::make_shared<PauseOptions>();
  CLI::App* command = app.add_subcommand(
      "pause", "Grant nothing on KEY to anyone for DURATION (e.g. after HTTP 429 Retry-After)");
  command->footer("A longer pause already running is kept; reset ends it. A bare number is "
                  "seconds, as Retry-After gives them.\n"
                  "Example: ratelimit pause api 30s");
  // Checked by run_pause, whose message names both: CLI11's would name one alone.
  CLI::Option* key =
      command->add_option("key", options->key, "The key to pause")->option_text("KEY");
  CLI::Option* duration =
      command->add_option("duration", options->duration, "How long: 30s, 1.5min, 30 (seconds)")
          ->option_text("DURATION");
  return [options, key, duration](const OutputSettings& output, ConfigFiles&, StoreOpener& stores) {
    options->given = static_cast<int>(key->count() + duration->count());
    return run_pause(*options, output.json, stores);
  };
}

} // namespace ratelimit::cli

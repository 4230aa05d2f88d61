#include "cli/acquire.hpp"
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"

#include <CLI/CLI.hpp>
#include <memory>

namespace ratelimit::cli {

namespace {

int run_try(LimitOptions options, const OutputSettings& output, ConfigFiles& config,
            StoreOpener& stores) {
  apply_named_limit(options, config);
  LimitedRequest request = resolve(options);
  util::InterruptSignals signals;
  Acquired acquired = acquire_from_store(stores, output, signals, request, Asking::now, 0);
  if (acquired.signal != 0) {
    return 128 + acquired.signal;
  }
  return acquired.decision.allowed ? k_exit_granted : output.limited_exit_code;
}

} // namespace

CommandRun setup_try(CLI::App& app, const MentionedOptions& mentioned) {
  auto options = std::make_shared<LimitOptions>();
  CLI::App* command = app.add_subcommand("try", "Decide now: exit 0 if granted, 1 if limited");
  command->footer("Example: ratelimit try api -r 10/s && curl https://api.example.com/");
  add_limit_options(*command, *options, mentioned);
  return [options](const OutputSettings& output, ConfigFiles& config, StoreOpener& stores) {
    return run_try(*options, output, config, stores);
  };
}

} // namespace ratelimit::cli

#include "cli/acquire.hpp"
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

namespace ratelimit::cli {

namespace {

struct WaitOptions {
  LimitOptions limit;
  std::optional<std::string> timeout;
};

int run_wait(WaitOptions options, const OutputSettings& output, ConfigFiles& config,
             StoreOpener& stores) {
  std::optional<std::string> named_timeout = apply_named_limit(options.limit, config);
  LimitedRequest request = resolve(options.limit);
  core::Nanos max_wait = parse_timeout(options.timeout ? options.timeout : named_timeout);
  util::InterruptSignals signals;
  Acquired acquired =
      acquire_from_store(stores, output, signals, request, Asking::for_the_next, max_wait);
  if (acquired.signal != 0) {
    return 128 + acquired.signal;
  }
  return acquired.decision.allowed ? k_exit_granted : output.limited_exit_code;
}

} // namespace

CommandRun setup_wait(CLI::App& app, const MentionedOptions& mentioned) {
  auto options = std::make_shared<WaitOptions>();
  CLI::App* command =
      app.add_subcommand("wait", "Reserve the next slot and sleep until it, then exit 0");
  command->footer("Example: ratelimit wait api -r 100/min -t 30s && curl https://api.example.com/");
  add_limit_options(*command, options->limit, mentioned);
  add_wait_timeout_option(*command, options->timeout, mentioned);
  return [options](const OutputSettings& output, ConfigFiles& config, StoreOpener& stores) {
    return run_wait(*options, output, config, stores);
  };
}

} // namespace ratelimit::cli

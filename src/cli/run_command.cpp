#include "cli/acquire.hpp"
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/report.hpp"
#include "cli/usage_error.hpp"
#include "util/standard_streams.hpp"
#include "util/key_text.hpp"

#include "util/key_text.hpp"
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

namespace ratelimit::cli {

namespace {

struct RunOptions {
  LimitOptions limit;
  std::optional<std::string> timeout;
  bool no_wait = false;
  std::vector<std::string> command;
};

// Replaces this process with `command`; returns only on failure, with the exit status.
int execute(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& word : command) {
    argv.push_back(const_cast<char*>(word.c_str()));
  }
  argv.push_back(nullptr);
  // The command inherits standard output: what is buffered goes first, or the report
  // that it could not.
  if (!check_stdout()) {
    throw OutputError();
  }
  ::execvp(argv[0], argv.data());
  int error = errno;
  // Escaped as keys are: a command name must not forge a line or reach the terminal raw.
  util::write_stderr(fmt::format("ratelimit: cannot run {}: {}\n", util::printable_key(command[0]),
                                 error == ENOENT ? "command not found" : std::strerror(error)));
  return error == ENOENT ? k_exit_not_found : k_exit_cannot_execute;
}

int run_run(RunOptions options, const GlobalOptions& global) {
  std::optional<std::string> named_timeout = apply_named_limit(options.limit, global);
  if (!options.timeout) {
    options.timeout = named_timeout;
  }
  LimitedRequest request = resolve(options.limit);
  if (options.command.empty()) {
    throw UsageError(
        "no command to run; expected ratelimit run KEY [-r N/PERIOD] [--] COMMAND [ARG...]");
  }
  core::Nanos max_wait = parse_timeout(options.timeout);
  util::InterruptSignals signals;
  // The store is closed again before the command runs.
  Acquired acquired =
      acquire_from_store(global, signals, request,
                         options.no_wait ? Asking::now_to_run : Asking::for_the_next, max_wait);
  if (acquired.signal != 0) {
    return 128 + acquired.signal;
  }
  if (!acquired.decision.allowed) {
    return global.limited_exit_code;
  }
  signals.restore();
  return execute(options.command);
}

} // namespace

CommandRun setup_run(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand("run", "Wait for a slot, then execute COMMAND (no shell)");
  command->footer(
      "Options end at the first word after KEY that is not one: COMMAND, with or without --.\n"
      "Exit status: COMMAND's; 1 (-E) when limited; 125 for ratelimit's own failures (usage, "
      "store, output); 126 if COMMAND cannot be executed, 127 if it is not found.\n"
      "Example: ratelimit run api -r 5/s -- curl -sO https://api.example.com/");
  add_limit_options(*command, options->limit);
  command
      ->add_option("-t,--timeout", options->timeout,
                   "Give up at once (exit 1) if the slot is further away than this")
      ->option_text("DURATION");
  command->add_flag("--no-wait", options->no_wait,
                    "Do not wait: run COMMAND only if a slot is free now, else exit 1");
  command
      ->add_option("command", options->command,
                   "The command and its arguments: from the first word after KEY that is not "
                   "an option, or after --")
      ->option_text("[--] COMMAND [ARG...]");
  return [options, &global] { return run_run(*options, global); };
}

} // namespace ratelimit::cli

#include "cli/acquire.hpp"
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/report.hpp"
#include "cli/run_holding.hpp"
#include "cli/usage_error.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

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
  std::optional<std::string> concurrency; // -j N
  bool until_exit = false;
  std::optional<std::string> lease;
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

// -j and --until-exit: the command runs as a child that holds a slot until it exits.
int run_holding_slot(RunOptions options, const GlobalOptions& global) {
  HoldingRun run;
  run.until_exit = options.until_exit;
  if (options.concurrency) {
    run.concurrency = parse_positive("--concurrency", *options.concurrency);
  }
  if (options.until_exit) {
    bool algorithm_given = options.limit.algorithm.has_value();
    if (!options.limit.bursts.empty() ||
        (algorithm_given && *options.limit.algorithm != "sliding-log")) {
      throw UsageError("--until-exit counts each command from its start to its exit, as a "
                       "sliding log counts grants; it takes no -a (but sliding-log) nor -b");
    }
  }
  std::optional<std::string> named_timeout;
  bool rates_needed =
      options.until_exit || !options.limit.rates.empty() ||
      (!options.limit.key.empty() && configuration(global).limits.contains(options.limit.key));
  if (rates_needed) {
    named_timeout = apply_named_limit(options.limit, global);
    if (options.until_exit) {
      // A named limit's algorithm and bursts do not apply: each rate is a count of runs.
      options.limit.algorithm = "sliding-log";
      options.limit.bursts.clear();
    }
    run.request = resolve(options.limit);
  } else {
    check_key(options.limit.key);
    run.request.key = options.limit.key;
    run.request.cost = parse_positive("cost", options.limit.cost.value_or("1"));
  }
  if (run.concurrency > 0 && run.request.cost > run.concurrency) {
    throw UsageError(fmt::format("cost {} is above --concurrency {}: the command could never "
                                 "run; give -c at most {}",
                                 run.request.cost, run.concurrency, run.concurrency));
  }
  if (!options.timeout) {
    options.timeout = named_timeout;
  }
  if (options.command.empty()) {
    throw UsageError(
        "no command to run; expected ratelimit run KEY [-r N/PERIOD] [--] COMMAND [ARG...]");
  }
  run.max_wait = parse_timeout(options.timeout);
  run.no_wait = options.no_wait;
  auto lease = core::parse_duration(options.lease.value_or("30s"));
  if (!lease) {
    throw UsageError("--lease: " + lease.error());
  }
  if (*lease < core::k_nanos_per_second) {
    throw UsageError(fmt::format("invalid --lease \"{}\": expected a duration of at least 1s, "
                                 "e.g. 30s",
                                 *options.lease));
  }
  run.lease = *lease;
  run.command = std::move(options.command);
  return run_holding(run, global);
}

int run_run(RunOptions options, const GlobalOptions& global) {
  if (options.lease && !options.concurrency && !options.until_exit) {
    throw UsageError("--lease applies to -j and --until-exit; give one of them");
  }
  if (options.concurrency || options.until_exit) {
    return run_holding_slot(std::move(options), global);
  }
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
      ->add_option("-j,--concurrency", options->concurrency,
                   "At most N commands of KEY run at once, across processes (and hosts with "
                   "Redis); waiters start in arrival order; alone or with -r")
      ->option_text("N");
  command->add_flag("--until-exit", options->until_exit,
                    "Count each command from its start until it exits: no PERIOD overlaps more "
                    "than N commands' run times (for APIs that count arrivals)");
  command
      ->add_option("--lease", options->lease,
                   "With -j or --until-exit on Redis: a holder on a lost host frees its slot "
                   "after this (default 30s; renewed every third of it while it runs)")
      ->option_text("DURATION");
  command
      ->add_option("command", options->command,
                   "The command and its arguments: from the first word after KEY that is not "
                   "an option, or after --")
      ->option_text("[--] COMMAND [ARG...]");
  return [options, &global] { return run_run(*options, global); };
}

} // namespace ratelimit::cli

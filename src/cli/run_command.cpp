#include "cli/acquire.hpp"
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/pause.hpp"
#include "cli/report.hpp"
#include "cli/run_holding.hpp"
#include "cli/run_observing.hpp"
#include "cli/run_retry_options.hpp"
#include "cli/run_retrying.hpp"
#include "cli/usage_error.hpp"
#include "core/backoff.hpp"
#include "util/child_process.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <optional>
#include <random>
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
  RetryOptionTexts retry;
  ObserveRunOptions observe;
  std::optional<std::string> jitter; // default none
  // Words of COMMAND's arguments that name options of run's, such as `-r` (run k echo hi
  // -r 5/s): named when KEY turns out to have no rate.
  std::vector<std::string> options_after_command;
};

// Without -r, the limit named KEY (see apply_named_limit). When there is none and options of
// run's came after COMMAND, where they went is part of the message.
std::optional<std::string> named_limit(RunOptions& options, ConfigFiles& config) {
  try {
    return apply_named_limit(options.limit, config);
  } catch (const UsageError& error) {
    if (options.options_after_command.empty()) {
      throw;
    }
    throw UsageError(fmt::format("{}; {} came after COMMAND {} and went to it: give run's "
                                 "options before COMMAND",
                                 error.what(), fmt::join(options.options_after_command, ", "),
                                 util::printable_key(options.command.front())));
  }
}

// The message for a command that cannot be started; escaped as keys are: a command name
// must not forge a line or reach the terminal raw.
int cannot_run(const std::string& name, int error) {
  util::write_stderr(fmt::format("ratelimit: cannot run {}: {}\n", util::printable_key(name),
                                 error == ENOENT ? "command not found" : std::strerror(error)));
  return error == ENOENT ? k_exit_not_found : k_exit_cannot_execute;
}

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
  return cannot_run(command[0], errno);
}

// The command's grant, for its environment ($RATELIMIT_GRANT) and its answer: the sequence
// of a grant the store made; none for one made without it (--on-store-error=allow).
std::optional<std::int64_t> grant_of(const Acquired& acquired) {
  if (acquired.failed_open) {
    ::unsetenv("RATELIMIT_GRANT");
    return std::nullopt;
  }
  ::setenv("RATELIMIT_GRANT", std::to_string(acquired.decision.grant.seq).c_str(), 1);
  return acquired.decision.grant.seq;
}

// run --backoff-on or --observe: the command runs as a child, as many times as --retries
// allows; each exit with a status of --backoff-on pauses the key, for longer each time, and
// under --observe each answer is observed (a 429 or 503 pauses the key as the server asks).
int run_retrying(const RunOptions& options, StoreOpener& stores, const OutputSettings& output,
                 LimitedRequest request, core::Nanos max_wait, const RetryOptions& retry) {
  request.awaits_answer = retry.observe;
  core::Nanos jitter = parse_jitter(options.jitter);
  RetryingRuns runs(retry, stores, output, request.key, options.command);
  util::InterruptSignals signals;
  Asking asking = options.no_wait ? Asking::now_to_run : Asking::for_the_next;
  for (;;) {
    Acquired acquired =
        acquire_from_store(stores, output, signals, request, asking, max_wait, jitter);
    if (acquired.signal != 0) {
      return 128 + acquired.signal;
    }
    if (!acquired.decision.allowed) {
      return output.limited_exit_code;
    }
    std::optional<std::int64_t> grant = grant_of(acquired);
    // The command inherits standard output: what is buffered goes first.
    if (!check_stdout()) {
      throw OutputError();
    }
    signals.restore();
    ChildRun run = runs.run(grant);
    signals.block();
    if (!runs.again(run)) {
      return run.status;
    }
    // A retry waits for its slot after the pause, even under --no-wait: the pause is why
    // it was made.
    asking = Asking::for_the_next;
  }
}

// -j and --until-exit: the command runs as a child that holds a slot until it exits.
int run_holding_slot(RunOptions options, ConfigFiles& config, StoreOpener& stores,
                     const OutputSettings& output, RetryOptions retry) {
  HoldingRun run;
  run.until_exit = options.until_exit;
  run.retry = &retry;
  run.jitter = parse_jitter(options.jitter);
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
      (!options.limit.key.empty() && config.config().limits.contains(options.limit.key));
  if (options.limit.adaptive && options.until_exit) {
    throw UsageError("--adaptive spaces grants at a rate learned from the answers, and "
                     "--until-exit counts each run from its start to its exit: give one of them");
  }
  if (options.limit.adaptive && !rates_needed) {
    throw UsageError("--adaptive needs a rate, the ceiling of the rate it learns; expected "
                     "ratelimit run KEY -j N -r N/PERIOD --adaptive ... -- COMMAND");
  }
  if (rates_needed) {
    named_timeout = named_limit(options, config);
    if (options.until_exit) {
      // A named limit's algorithm, bursts and adaptive rate do not apply: each rate is a
      // count of runs.
      options.limit.algorithm = "sliding-log";
      options.limit.bursts.clear();
      options.limit.adaptive = false;
    }
    run.request = resolve(options.limit);
    run.request.awaits_answer = retry.observe;
    retry.adaptive = run.request.adaptive;
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
  // What a command needs to call `ratelimit pause "$RATELIMIT_KEY"` on the same store.
  stores.export_environment();
  ::setenv("RATELIMIT_KEY", run.request.key.c_str(), 1);
  return run_holding(run, stores, output);
}

int run_run(RunOptions options, const OutputSettings& output, ConfigFiles& config,
            StoreOpener& stores) {
  if (options.lease && !options.concurrency && !options.until_exit) {
    throw UsageError("--lease applies to -j and --until-exit; give one of them");
  }
  RetryOptions retry = resolve_retry_options(options.retry, options.observe);
  if (options.concurrency || options.until_exit) {
    return run_holding_slot(std::move(options), config, stores, output, retry);
  }
  std::optional<std::string> named_timeout = named_limit(options, config);
  if (!options.timeout) {
    options.timeout = named_timeout;
  }
  LimitedRequest request = resolve(options.limit);
  retry.adaptive = request.adaptive;
  if (options.command.empty()) {
    throw UsageError(
        "no command to run; expected ratelimit run KEY [-r N/PERIOD] [--] COMMAND [ARG...]");
  }
  core::Nanos max_wait = parse_timeout(options.timeout);
  // What a command needs to call `ratelimit pause "$RATELIMIT_KEY"` on the same store.
  stores.export_environment();
  ::setenv("RATELIMIT_KEY", request.key.c_str(), 1);
  if (!retry.backoff_on.empty() || retry.observe) {
    return run_retrying(options, stores, output, request, max_wait, retry);
  }
  util::InterruptSignals signals;
  // The store is closed again before the command runs.
  Acquired acquired = acquire_from_store(
      stores, output, signals, request, options.no_wait ? Asking::now_to_run : Asking::for_the_next,
      max_wait, parse_jitter(options.jitter));
  if (acquired.signal != 0) {
    return 128 + acquired.signal;
  }
  if (!acquired.decision.allowed) {
    return output.limited_exit_code;
  }
  grant_of(acquired);
  signals.restore();
  return execute(options.command);
}

} // namespace

CommandRun setup_run(CLI::App& app, const MentionedOptions& mentioned) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand("run", "Wait for a slot, then execute COMMAND (no shell)");
  command->footer(
      "Options end at the first word after KEY that is not one: COMMAND, with or without --.\n"
      "Exit status: COMMAND's (its last run's); 1 (-E) when limited; 125 for ratelimit's own "
      "failures (usage, store, output); 126 if COMMAND cannot be executed, 127 if it is not "
      "found.\n"
      "COMMAND finds KEY in $RATELIMIT_KEY, to call ratelimit pause \"$RATELIMIT_KEY\" 30s.\n"
      "Example: ratelimit run api -r 5/s -- curl -sO https://api.example.com/");
  add_limit_options(*command, options->limit, mentioned);
  add_wait_timeout_option(*command, options->timeout, mentioned);
  if (mentioned.any_of("--no-wait")) {
    command->add_flag("--no-wait", options->no_wait,
                      "Do not wait: run COMMAND only if a slot is free now, else exit 1");
  }
  add_retry_options(*command, options->retry, mentioned);
  if (mentioned.any_of("-j,--concurrency")) {
    command
        ->add_option("-j,--concurrency", options->concurrency,
                     "At most N commands of KEY run at once, across processes (and hosts with "
                     "Redis); waiters start in arrival order; alone or with -r")
        ->option_text("N");
  }
  if (mentioned.any_of("--until-exit")) {
    command->add_flag("--until-exit", options->until_exit,
                      "Count each command from its start until it exits: no PERIOD overlaps more "
                      "than N commands' run times (for APIs that count arrivals)");
  }
  if (mentioned.any_of("--lease")) {
    command
        ->add_option("--lease", options->lease,
                     "With -j or --until-exit on Redis: a holder on a lost host frees its slot "
                     "after this (default 30s; renewed every third of it while it runs)")
        ->option_text("DURATION");
  }
  add_observe_run_options(*command, options->observe, mentioned);
  if (mentioned.any_of("--jitter")) {
    command
        ->add_option("--jitter", options->jitter,
                     "Start COMMAND up to DURATION (at random) after a slot it waited for, so that "
                     "waiters do not all start together")
        ->option_text("DURATION");
  }
  command
      ->add_option("command", options->command,
                   "The command and its arguments: from the first word after KEY that is not "
                   "an option, or after --")
      ->option_text("[--] COMMAND [ARG...]");
  return [options, command, &app](const OutputSettings& output, ConfigFiles& config,
                                  StoreOpener& stores) {
    // Looked for only among COMMAND's arguments: its name may be anything.
    for (std::size_t i = 1; i < options->command.size(); ++i) {
      const std::string& word = options->command[i];
      if (word.size() < 2 || word[0] != '-' || word == "--") {
        continue;
      }
      std::string name =
          word.starts_with("--") ? word.substr(0, word.find('=')) : word.substr(0, 2);
      if (command->get_option_no_throw(name) != nullptr ||
          app.get_option_no_throw(name) != nullptr) {
        options->options_after_command.push_back(name);
      }
    }
    return run_run(*options, output, config, stores);
  };
}

} // namespace ratelimit::cli

#include "cli/run_retry_options.hpp"

#include "cli/usage_error.hpp"
#include "core/rate.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <fmt/format.h>
#include <string_view>

namespace ratelimit::cli {

namespace {

// Parses a --backoff or --backoff-max duration, above 0; throws UsageError.
core::Nanos parse_backoff(std::string_view option, const std::optional<std::string>& text,
                          std::string_view fallback) {
  auto duration = core::parse_duration(text.value_or(std::string(fallback)));
  if (!duration) {
    throw UsageError(fmt::format("{}: {}", option, duration.error()));
  }
  if (*duration <= 0) {
    throw UsageError(fmt::format("{}: expected a duration above 0, e.g. 1s, 500ms", option));
  }
  return *duration;
}

// --backoff-on's CODE: a status COMMAND exits with, which an HTTP status is not.
CLI::Validator exit_status_validator() {
  return CLI::Validator(
      [](const std::string& value) {
        int code = 0;
        auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), code);
        if (error == std::errc() && end == value.data() + value.size() && code >= 1 &&
            code <= 255) {
          return std::string();
        }
        return fmt::format("\"{}\" is not an exit status: CODE is a status COMMAND exits with, 1 "
                           "to 255, not an HTTP status (curl -f exits 22 on an HTTP error, 429 "
                           "included)",
                           value.substr(0, 64));
      },
      "CODE");
}

} // namespace

void add_retry_options(CLI::App& run, RetryOptionTexts& options,
                       const MentionedOptions& mentioned) {
  if (mentioned.any_of("--backoff-on")) {
    run.add_option("--backoff-on", options.backoff_on,
                   "When COMMAND exits with status CODE (curl -f exits 22 on an HTTP error), "
                   "pause KEY for the backoff (repeatable); COMMAND then runs as a child")
        ->option_text("CODE")
        ->expected(1)
        ->allow_extra_args(false) // one CODE per option; `--` after it ends the options
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->check(exit_status_validator());
  }
  if (mentioned.any_of("--backoff")) {
    run.add_option("--backoff", options.backoff,
                   "The first backoff pause (default 1s), doubled at each further such exit")
        ->option_text("DURATION");
  }
  if (mentioned.any_of("--backoff-max")) {
    run.add_option("--backoff-max", options.backoff_max, "The longest backoff pause (default 5min)")
        ->option_text("DURATION");
  }
  if (mentioned.any_of("--retries")) {
    run.add_option("--retries", options.retries,
                   "With --backoff-on or --observe: run COMMAND again after the pause, up to N "
                   "times")
        ->option_text("N")
        ->check(CLI::Range(0, 1000000));
  }
}

RetryOptions resolve_retry_options(const RetryOptionTexts& options,
                                   const ObserveRunOptions& observe) {
  RetryOptions retry;
  retry.backoff_on = options.backoff_on;
  retry.observe = observe.observe;
  retry.max_pause = check_observe_run_options(observe);
  if (retry.backoff_on.empty() && !retry.observe) {
    for (const auto& [given, name] :
         {std::pair{options.retries.has_value(), "--retries"},
          std::pair{options.backoff.has_value(), "--backoff"},
          std::pair{options.backoff_max.has_value(), "--backoff-max"}}) {
      if (given) {
        throw UsageError(fmt::format("{} applies only with --backoff-on CODE or --observe; "
                                     "expected ratelimit run KEY --backoff-on CODE {} ... -- "
                                     "COMMAND",
                                     name, name));
      }
    }
  }
  retry.backoff = parse_backoff("--backoff", options.backoff, "1s");
  retry.backoff_max = parse_backoff("--backoff-max", options.backoff_max, "5min");
  if (retry.backoff_max < retry.backoff) {
    throw UsageError(fmt::format("--backoff-max {} is shorter than --backoff {}; expected "
                                 "--backoff-max at least --backoff",
                                 options.backoff_max.value_or("5min"),
                                 options.backoff.value_or("1s")));
  }
  retry.retries = options.retries.value_or(0);
  return retry;
}

} // namespace ratelimit::cli

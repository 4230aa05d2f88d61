#pragma once

#include "cli/cli11_fwd.hpp"
#include "cli/mentioned_options.hpp"
#include "cli/run_observing.hpp"
#include "cli/run_retrying.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ratelimit::cli {

// run's options that decide what happens after the command, as typed: --backoff-on CODE (the
// exit statuses that pause the key), --backoff, --backoff-max and --retries.
struct RetryOptionTexts {
  std::vector<int> backoff_on;
  std::optional<std::string> backoff;     // default 1s
  std::optional<std::string> backoff_max; // default 5min
  std::optional<int> retries;             // default 0
};

// Adds them to `run`, those the command line may name.
void add_retry_options(CLI::App& run, RetryOptionTexts& options, const MentionedOptions& mentioned);

// What happens after the command, from them and --observe with its --max-pause (--backoff,
// --backoff-max and --retries apply with --backoff-on or --observe). Throws UsageError.
RetryOptions resolve_retry_options(const RetryOptionTexts& options,
                                   const ObserveRunOptions& observe);

} // namespace ratelimit::cli

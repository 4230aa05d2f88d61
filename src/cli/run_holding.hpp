#pragma once

#include "cli/limit_options.hpp"
#include "cli/output_settings.hpp"
#include "cli/run_retrying.hpp"
#include "cli/store_opener.hpp"
#include "core/run_slots.hpp"

#include <string>
#include <vector>

namespace ratelimit::cli {

// `run` with -j N and/or --until-exit: the command holds a slot of KEY while it runs.
struct HoldingRun {
  // The key and cost; the rates (none for -j alone) and, without --until-exit, the algorithm
  // that decides them.
  LimitedRequest request;
  // -j N: at most N commands of the key at once; 0 when not given.
  std::int64_t concurrency = 0;
  // --until-exit: each rate N/PERIOD counts a command from its start until its exit, so that
  // no PERIOD overlaps more than N commands' run times.
  bool until_exit = false;
  bool no_wait = false;
  core::Nanos max_wait = 0;
  // How long a holder counts as alive without renewing, where liveness needs a lease.
  core::Nanos lease = 30 * core::k_nanos_per_second;
  std::vector<std::string> command;
  // What happens after the command: --backoff-on, --observe, --retries (none when null).
  const RetryOptions* retry = nullptr;
  // --jitter: a command that waited for its rate's slot starts up to this later.
  core::Nanos jitter = 0;
};

// The caps of `run`: one per rate under --until-exit (held a period after the exit), and
// the concurrency cap (released at the exit).
std::vector<core::RunCap> run_caps(const HoldingRun& run);

// Waits for a slot (in arrival order, sleeping until a known release or blocked until a
// holder exits; within --timeout; at once with --no-wait), then, without --until-exit, for
// the rates as `run` does; starts the command as a child, passes signals on to it, waits,
// frees the slot, and returns the command's status (128 + N for signal N). Limited: the
// limited status, with the refusal reported as `run` reports it. The slots are those of the
// store of `stores`, and of the local database after an outage under --on-store-error=local.
// With `retry`, the command's end is handled as `run` handles it (RetryingRuns): a retry
// takes a new slot, after the pause, as the first did (even under --no-wait).
int run_holding(const HoldingRun& run, StoreOpener& stores, const OutputSettings& output);

} // namespace ratelimit::cli

#include "cli/acquire.hpp"

#include "cli/countdown.hpp"
#include "cli/report.hpp"
#include "cli/usage_error.hpp"
#include "util/clock.hpp"
#include "util/json.hpp"
#include "util/standard_streams.hpp"

#include <cstdio>
#include <fmt/format.h>
#include <limits>

namespace ratelimit::cli {

core::Nanos parse_timeout(const std::optional<std::string>& text) {
  if (!text) {
    return std::numeric_limits<core::Nanos>::max();
  }
  auto timeout = core::parse_duration(*text);
  if (!timeout) {
    throw UsageError("--timeout: " + timeout.error());
  }
  return *timeout;
}

Acquired acquire(store::Store& store, util::InterruptSignals& signals, const GlobalOptions& global,
                 const LimitedRequest& request, Asking asking, core::Nanos max_wait) {
  core::Request ask;
  ask.cost = request.cost;
  ask.reserve = asking == Asking::for_the_next;
  ask.max_wait = max_wait;
  // try reports no waited_ms; wait and run report the time they slept, 0 when they did not.
  std::optional<core::Nanos> no_wait =
      asking == Asking::now ? std::nullopt : std::optional<core::Nanos>(0);
  Acquired acquired;
  acquired.decision =
      store.decide(request.key, request.algorithm, request.algorithm_chosen, request.limits, ask);
  if (!acquired.decision.allowed) {
    report(global, request, acquired.decision, no_wait, max_wait);
    return acquired;
  }
  std::int64_t started = util::monotonic_nanos();
  acquired.signal =
      sleep_with_countdown(signals, acquired.decision.wait, request.key, global.quiet);
  acquired.waited = util::monotonic_nanos() - started;
  if (acquired.signal != 0) {
    try {
      store.give_back(request.key, acquired.decision.algorithm, request.limits,
                      acquired.decision.grant);
    } catch (const store::StoreError& error) {
      // The slot stays taken: conservative, it never over-admits.
      if (!fail_open(global, error)) {
        throw;
      }
    }
    return acquired;
  }
  report(global, request, acquired.decision,
         asking == Asking::now ? std::nullopt : std::optional<core::Nanos>(acquired.waited));
  return acquired;
}

bool fail_open(const GlobalOptions& global, const store::StoreError& error) {
  if (global.on_store_error != "allow") {
    return false;
  }
  std::string message = error.what();
  for (char& c : message) {
    if (c == '\n') {
      c = ' ';
    }
  }
  util::write_stderr(fmt::format(
      "ratelimit: warning: {}; going on without the store (--on-store-error=allow)\n", message));
  return true;
}

Acquired acquire_from_store(const GlobalOptions& global, util::InterruptSignals& signals,
                            const LimitedRequest& request, Asking asking, core::Nanos max_wait) {
  std::string failure;
  try {
    auto store = open_store(global);
    return acquire(*store, signals, global, request, asking, max_wait);
  } catch (const store::StoreError& error) {
    if (!fail_open(global, error)) {
      throw;
    }
    failure = error.what();
  }
  Acquired acquired;
  acquired.decision.allowed = true;
  acquired.failed_open = true;
  if (global.json) {
    util::JsonObject object;
    object.field("key", request.key).field("allowed", true).field("store_error", failure);
    util::write_stdout(object.str() + "\n");
    util::flush_stdout();
  }
  return acquired;
}

} // namespace ratelimit::cli

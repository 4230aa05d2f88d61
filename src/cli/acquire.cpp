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

namespace {

// Gives back what `decision` reserved; under --on-store-error=allow a failure leaves the
// slot taken, which never over-admits. Before `deciding_again`, an outage under local goes
// on to the local database's decision instead.
void give_back(store::Store& store, const GlobalOptions& global, const LimitedRequest& request,
               const core::Decision& decision, bool deciding_again) {
  try {
    store.give_back(request.key, decision.algorithm, request.limits, decision.grant);
  } catch (const store::StoreError& error) {
    if ((deciding_again && falls_back_locally(global, error)) || !fail_open(global, error)) {
      throw;
    }
  }
}

// Whether a pause of the key runs now. Under --on-store-error=allow (and local, for an
// outage) a store that fails to tell is taken to say no: the slot it granted stands.
bool paused_meanwhile(store::Store& store, const GlobalOptions& global,
                      const LimitedRequest& request) {
  try {
    return store.pause_of(request.key).paused_until != 0;
  } catch (const store::StoreError& error) {
    if (!fail_open(global, error)) {
      throw;
    }
  }
  return false;
}

} // namespace

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
  for (;;) {
    if (acquired.decision.wait >= store::k_long_sleep) {
      store.close_while_sleeping(); // the slot is taken: nothing holds it but the store
    }
    acquired.signal =
        sleep_with_countdown(signals, acquired.decision.wait, request.key, global.quiet);
    acquired.waited = util::monotonic_nanos() - started;
    if (acquired.signal != 0) {
      give_back(store, global, request, acquired.decision, false);
      return acquired;
    }
    // A pause may have begun while this waiter slept: checked once on waking, never in
    // between. Only a waiter that slept can have missed one; a decision sees every pause.
    if (acquired.decision.wait == 0 || !paused_meanwhile(store, global, request)) {
      break;
    }
    // The slot is given back and the next one after the pause reserved in its place, as
    // the limits would place it then: the waiters the pause held do not all go at its end.
    give_back(store, global, request, acquired.decision, true);
    if (max_wait != std::numeric_limits<core::Nanos>::max()) {
      ask.max_wait = std::max<core::Nanos>(0, max_wait - acquired.waited);
    }
    acquired.decision =
        store.decide(request.key, request.algorithm, request.algorithm_chosen, request.limits, ask);
    if (!acquired.decision.allowed) {
      report(global, request, acquired.decision, acquired.waited, max_wait);
      return acquired;
    }
  }
  // Up to now, the check for a pause included: the caller goes on from here.
  acquired.waited = util::monotonic_nanos() - started;
  report(global, request, acquired.decision,
         asking == Asking::now ? std::nullopt : std::optional<core::Nanos>(acquired.waited));
  return acquired;
}

Acquired acquire_from_store(const GlobalOptions& global, util::InterruptSignals& signals,
                            const LimitedRequest& request, Asking asking, core::Nanos max_wait) {
  std::string failure;
  try {
    auto store = open_store(global);
    return acquire(*store, signals, global, request, asking, max_wait);
  } catch (const store::StoreError& error) {
    if (falls_back_locally(global, error)) {
      // The same request, on this host's database; a reservation the store made before it
      // failed stays taken there, which never over-admits.
      auto local = fall_back_locally(global, error);
      return acquire(*local, signals, global, request, asking, max_wait);
    }
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

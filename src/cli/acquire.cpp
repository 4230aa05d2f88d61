#include "cli/acquire.hpp"

#include "cli/countdown.hpp"
#include "cli/report.hpp"
#include "cli/usage_error.hpp"
#include "util/clock.hpp"

#include <limits>

namespace ratelimit::cli {

core::Nanos parse_timeout(const std::string& text) {
  if (text.empty()) {
    return std::numeric_limits<core::Nanos>::max();
  }
  auto timeout = core::parse_duration(text);
  if (!timeout) {
    throw UsageError("--timeout: " + timeout.error());
  }
  return *timeout;
}

Acquired acquire(store::Store& store, util::InterruptSignals& signals, const GlobalOptions& global,
                 const LimitedRequest& request, bool reserve, core::Nanos max_wait) {
  core::Request ask;
  ask.cost = request.cost;
  ask.reserve = reserve;
  ask.max_wait = max_wait;
  Acquired acquired;
  acquired.decision = store.decide(request.key, request.algorithm, request.limits, ask);
  if (!acquired.decision.allowed) {
    report(global, request, acquired.decision, reserve ? std::optional<core::Nanos>(0) : std::nullopt);
    return acquired;
  }
  std::int64_t started = util::monotonic_nanos();
  acquired.signal =
      sleep_with_countdown(signals, acquired.decision.wait, request.key, global.quiet);
  acquired.waited = util::monotonic_nanos() - started;
  if (acquired.signal != 0) {
    store.give_back(request.key, request.algorithm, request.limits, acquired.decision.grant);
    return acquired;
  }
  report(global, request, acquired.decision,
         reserve ? std::optional<core::Nanos>(acquired.waited) : std::nullopt);
  return acquired;
}

} // namespace ratelimit::cli

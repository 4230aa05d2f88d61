#include "cli/acquire.hpp"

#include "cli/acquisition.hpp"
#include "cli/countdown.hpp"
#include "cli/report.hpp"
#include "cli/store_failure.hpp"
#include "cli/usage_error.hpp"
#include "util/clock.hpp"
#include "util/json.hpp"
#include "util/standard_streams.hpp"

#include <fmt/format.h>
#include <limits>
#include <random>

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

// The sleeps of `wait` and `run`: the system's monotonic clock; a signal ends a sleep, its
// number the code; a countdown on a terminal.
class CommandSleeper final : public Sleeper {
public:
  CommandSleeper(util::InterruptSignals& signals, std::string_view key, bool quiet)
      : m_signals(signals), m_key(key), m_quiet(quiet) {}

  core::Nanos now() override { return util::monotonic_nanos(); }
  int sleep(core::Nanos duration) override {
    return sleep_with_countdown(m_signals, duration, m_key, m_quiet);
  }

private:
  util::InterruptSignals& m_signals;
  std::string_view m_key;
  bool m_quiet;
};

// Under allow, a request decided without the store: the failure it went on without, as
// `allowed` and `store_error` (the store's figures are unknown).
void report_failed_open(const OutputSettings& output, const LimitedRequest& request,
                        std::string_view failure) {
  if (output.json) {
    util::JsonObject object;
    object.field("key", request.key).field("allowed", true).field("store_error", failure);
    util::write_stdout(object.str() + "\n");
    util::flush_stdout();
  }
}

} // namespace

core::Nanos draw_jitter(core::Nanos longest) {
  if (longest <= 0) {
    return 0;
  }
  std::random_device entropy;
  return std::uniform_int_distribution<core::Nanos>(0, longest - 1)(entropy);
}

core::Nanos parse_jitter(const std::optional<std::string>& text) {
  if (!text) {
    return 0;
  }
  auto jitter = core::parse_duration(*text);
  if (!jitter) {
    throw UsageError("--jitter: " + jitter.error());
  }
  return *jitter;
}

Acquired acquire(Gate& gate, util::InterruptSignals& signals, const OutputSettings& output,
                 const LimitedRequest& request, Asking asking, core::Nanos max_wait,
                 core::Nanos jitter) {
  SlotAsk ask;
  ask.cost = request.cost;
  ask.reserve = asking == Asking::for_the_next;
  ask.max_wait = max_wait;
  ask.awaits_answer = request.awaits_answer;
  ask.jitter = draw_jitter(jitter);
  CommandSleeper sleeper(signals, request.key, output.quiet);
  Acquisition acquisition = acquire_slot(gate, sleeper, ask);
  if (!acquisition.pause_unchecked.empty()) {
    util::write_stderr(pause_unchecked_warning(request.key, acquisition.pause_unchecked));
  }
  Acquired acquired;
  acquired.decision = std::move(acquisition.decision);
  acquired.waited = acquisition.waited;
  acquired.signal = acquisition.interrupted;
  if (acquired.signal != 0) {
    return acquired;
  }
  if (!gate.failure().empty() && acquired.decision.allowed) {
    acquired.failed_open = true;
    report_failed_open(output, request, gate.failure());
    return acquired;
  }
  // try reports no waited_ms; wait and run report the time they slept, 0 when they did not.
  std::optional<core::Nanos> waited =
      asking == Asking::now ? std::nullopt : std::optional<core::Nanos>(acquired.waited);
  report(output, request, acquired.decision, gate.local_fallback(), waited, max_wait);
  return acquired;
}

Acquired acquire_from_store(StoreOpener& stores, const OutputSettings& output,
                            util::InterruptSignals& signals, const LimitedRequest& request,
                            Asking asking, core::Nanos max_wait, core::Nanos jitter) {
  std::string failure;
  std::unique_ptr<store::Store> store = stores.open_or_fall_back(failure);
  FailOpenGate gate(store.get(), request, stores, failure);
  return acquire(gate, signals, output, request, asking, max_wait, jitter);
}

} // namespace ratelimit::cli

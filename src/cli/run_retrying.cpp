#include "cli/run_retrying.hpp"

#include "cli/pause.hpp"
#include "core/backoff.hpp"
#include "util/child_process.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ratelimit::cli {

RetryingRuns::RetryingRuns(const RetryOptions& options, StoreOpener& stores,
                           const OutputSettings& output, std::string key,
                           std::vector<std::string> command)
    : m_options(options), m_stores(stores), m_output(output), m_key(std::move(key)),
      m_command(std::move(command)), m_random(std::random_device{}()) {}

ChildRun RetryingRuns::run(std::optional<std::int64_t> grant, const std::function<void()>& tick,
                           std::int64_t tick_ns) {
  if (!m_options.observe) {
    return {util::run_child(m_command, tick, tick_ns), false};
  }
  ObserveSettings settings;
  settings.max_pause = m_options.max_pause;
  settings.grant = grant;
  settings.backoff = m_options.backoff;
  settings.attempt = m_attempt;
  return run_observed(m_command, m_stores, m_output, m_key, settings, tick, tick_ns);
}

bool RetryingRuns::again(const ChildRun& run) {
  bool backs_off = std::find(m_options.backoff_on.begin(), m_options.backoff_on.end(),
                             run.status) != m_options.backoff_on.end();
  if (m_options.adaptive && !m_options.backoff_on.empty() && (backs_off || run.status == 0)) {
    report_command_outcome(m_stores, m_key, backs_off);
  }
  if (!backs_off && !run.throttled) {
    return false;
  }
  bool retrying = m_attempt < m_options.retries;
  std::string retry =
      retrying ? fmt::format("; retry {} of {} after the pause", m_attempt + 1, m_options.retries)
               : std::string();
  if (backs_off) {
    double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(m_random);
    core::Nanos delay =
        core::backoff_delay(m_options.backoff, m_options.backoff_max, m_attempt, jitter);
    auto add_backoff = [&](util::JsonObject& object) {
      object.field("exit_status", std::int64_t{run.status})
          .field("backoff_ms", core::ceil_millis(delay))
          .field("retry", retrying);
    };
    try {
      pause_key(m_output.json, *m_stores.open(), m_key, delay, add_backoff);
    } catch (const store::StoreError& error) {
      if (m_stores.falls_back_locally(error)) {
        // Where the retry decides while the store is out of reach.
        pause_key(m_output.json, *m_stores.fall_back_locally(error), m_key, delay, add_backoff);
      } else if (!m_stores.fail_open(error)) {
        // Under --on-store-error=allow the retry goes on without the pause.
        throw;
      }
    }
    if (!m_output.quiet) {
      util::write_stderr(fmt::format(
          "ratelimit: {} exited with {}: {} paused for {}{}\n", util::printable_key(m_command[0]),
          run.status, util::printable_key(m_key), core::format_duration(delay), retry));
    }
  } else if (!m_output.quiet && retrying) {
    // The observation paused the key as the answer asked (Retry-After, or the backoff).
    util::write_stderr(fmt::format("ratelimit: {} was answered {}{}\n",
                                   util::printable_key(m_command[0]), run.answer_status, retry));
  }
  ++m_attempt;
  return retrying;
}

} // namespace ratelimit::cli

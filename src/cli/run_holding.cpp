#include "cli/run_holding.hpp"

#include "cli/acquire.hpp"
#include "cli/acquisition.hpp"
#include "cli/exit_status.hpp"
#include "cli/report.hpp"
#include "cli/usage_error.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <optional>

namespace ratelimit::cli {

namespace {

constexpr core::Nanos k_forever = std::numeric_limits<core::Nanos>::max();

std::string describe_cap(const core::RunCap& cap) {
  if (cap.hold == 0) {
    return fmt::format("(at most {} running at once)", cap.count);
  }
  return fmt::format("({} from start to exit)", core::format_rate({cap.count, cap.hold}));
}

// Why the command may not start, as one line: where its slot is, if anyone knows.
struct Refusal {
  std::size_t binding = 0;
  // When the slot is free, if known.
  std::optional<core::Nanos> retry_after;
  bool behind = false;
  bool timed_out = false;
  // The end of the key's pause, when a pause holds the start; else 0.
  core::Nanos paused_until = 0;
  core::Nanos now = 0;
};

// `local_fallback`: why the slots are the local database's, when they are (StoreOpener).
void report_refusal(const OutputSettings& output, std::string_view local_fallback,
                    const HoldingRun& run, const std::vector<core::RunCap>& caps,
                    const Refusal& refusal) {
  if (!output.quiet) {
    std::string limited =
        refusal.paused_until != 0
            ? fmt::format("{} paused until {}", util::printable_key(run.request.key),
                          utc_time(refusal.paused_until))
            : fmt::format("{} limited {}", util::printable_key(run.request.key),
                          describe_cap(caps[refusal.binding]));
    std::string where;
    if (refusal.behind) {
      where = "commands that came first are waiting";
    } else if (refusal.retry_after) {
      where = fmt::format("next slot in {}", core::format_duration(*refusal.retry_after));
    } else {
      where = "every slot is held by a running command";
    }
    if (refusal.timed_out) {
      where += fmt::format(", beyond --timeout {}", core::format_duration(run.max_wait));
    }
    util::write_stderr(fmt::format("ratelimit: {}; {}\n", limited, where));
  }
  if (output.json) {
    util::JsonObject object;
    object.field("key", run.request.key).field("allowed", false).field("cost", run.request.cost);
    if (refusal.retry_after) {
      object.field("retry_after_ms", core::ceil_millis(*refusal.retry_after));
    } else {
      object.raw_field("retry_after_ms", "null");
    }
    if (refusal.paused_until != 0) {
      core::Decision paused;
      paused.now = refusal.now;
      paused.paused_until = refusal.paused_until;
      add_pause_fields(object, paused);
    }
    if (!local_fallback.empty()) {
      object.field("store_error", local_fallback);
    }
    util::write_stdout(object.str() + "\n");
    util::flush_stdout();
  }
}

std::string caps_json(const std::vector<core::RunCap>& caps) {
  std::string json = "[";
  for (const core::RunCap& cap : caps) {
    util::JsonObject item;
    item.field("limit", cap.count).raw_field("period_ms", json_millis(cap.hold));
    if (json.size() > 1) {
      json += ',';
    }
    json += item.str();
  }
  return json + "]";
}

void report_start(const OutputSettings& output, std::string_view local_fallback,
                  const HoldingRun& run, const std::vector<core::RunCap>& caps,
                  core::Nanos waited) {
  if (!output.json) {
    return;
  }
  util::JsonObject object;
  object.field("key", run.request.key).field("allowed", true).field("cost", run.request.cost);
  if (run.concurrency > 0) {
    object.field("concurrency", run.concurrency);
  }
  object.field("until_exit", run.until_exit);
  if (run.until_exit) {
    std::vector<core::RunCap> rates(caps.begin(), caps.begin() + run.request.limits.size());
    object.raw_field("limits", caps_json(rates));
  }
  object.field("waited_ms", (waited + core::k_nanos_per_milli / 2) / core::k_nanos_per_milli);
  if (!local_fallback.empty()) {
    object.field("store_error", local_fallback);
  }
  util::write_stdout(object.str() + "\n");
  util::flush_stdout();
}

// The run slots of one command, as wait_for_run_slot sees them: signals end its sleeps.
class SlotQueue final : public RunSlotQueue {
public:
  SlotQueue(store::RunSlots& slots, util::InterruptSignals& signals, const HoldingRun& run,
            const std::vector<core::RunCap>& caps)
      : m_slots(slots), m_signals(signals), m_run(run), m_caps(caps) {}

  store::StartAnswer attempt() override {
    if (m_joined) {
      return m_slots.try_start(m_caps);
    }
    m_joined = true;
    core::Nanos hold = 0;
    for (const core::RunCap& cap : m_caps) {
      hold = std::max(hold, cap.hold);
    }
    return m_slots.join(m_run.request.key, m_run.request.cost, hold, m_caps);
  }
  int wait_for_change(core::Nanos timeout) override {
    return m_slots.wait_for_change(timeout, m_signals);
  }

private:
  store::RunSlots& m_slots;
  util::InterruptSignals& m_signals;
  const HoldingRun& m_run;
  const std::vector<core::RunCap>& m_caps;
  bool m_joined = false;
};

// The system's monotonic clock, for the timeout of a run slot's wait.
class SystemClock final : public Sleeper {
public:
  core::Nanos now() override { return util::monotonic_nanos(); }
  int sleep(core::Nanos) override { return 0; } // run slots sleep in the store
};

// Waits for the command's slot; a command that does not start leaves the queue, and a
// refusal is reported.
RunSlotWait wait_for_slot(store::RunSlots& slots, util::InterruptSignals& signals,
                          const OutputSettings& output, std::string_view local_fallback,
                          const HoldingRun& run, const std::vector<core::RunCap>& caps) {
  SlotQueue queue(slots, signals, run, caps);
  SystemClock clock;
  RunSlotWait wait = wait_for_run_slot(queue, clock, run.max_wait, run.no_wait);
  if (wait.started) {
    return wait;
  }
  slots.leave();
  if (wait.interrupted == 0) {
    const store::StartAnswer& answer = wait.answer;
    Refusal refusal{answer.admission.binding,
                    std::nullopt,
                    answer.behind,
                    wait.timed_out,
                    answer.behind ? 0 : answer.admission.paused_until,
                    answer.now};
    if (!answer.behind && answer.admission.admission == core::Admission::at) {
      refusal.retry_after = answer.admission.at - answer.now;
    }
    report_refusal(output, local_fallback, run, caps, refusal);
  }
  return wait;
}

// Adds what the slots decided to the key's counters. A store that fails now changes nothing of
// it: the count is lost, with a warning.
void count_on_slots(store::Store& store, const HoldingRun& run, bool granted, core::Nanos waited) {
  try {
    store.add_to_counters(run.request.key, granted, waited);
  } catch (const store::StoreError& error) {
    util::write_stderr(
        fmt::format("ratelimit: warning: cannot count the request: {}\n", error.what()));
  }
}

// Takes a place on the run slots of `store` into `slots` and waits for the command's slot as
// `run_holding` does; `grant` is the sequence of the rate's grant, when the store made one.
// Returns the status to end with, or nothing when the command may start.
std::optional<int> take_slot(store::Store& store, std::unique_ptr<store::RunSlots>& slots,
                             util::InterruptSignals& signals, const OutputSettings& output,
                             std::string_view local_fallback, const HoldingRun& run,
                             const std::vector<core::RunCap>& caps,
                             std::optional<std::int64_t>& grant) {
  grant.reset();
  slots = store.run_slots(run.lease);
  RunSlotWait slot = wait_for_slot(*slots, signals, output, local_fallback, run, caps);
  if (slot.interrupted != 0) {
    return 128 + slot.interrupted;
  }
  if (!slot.started) {
    // Refused a slot: limited, as a refusal by a rate is.
    count_on_slots(store, run, false, 0);
    return output.limited_exit_code;
  }
  core::Nanos left =
      run.max_wait == k_forever ? k_forever : std::max<core::Nanos>(0, run.max_wait - slot.waited);
  if (!run.until_exit && !run.request.limits.empty()) {
    // The rate's slot after the running slot: commands started in a burst once slots free
    // up would otherwise follow grants made long before.
    StoreGate gate(store, run.request, std::string(local_fallback));
    Acquired acquired =
        acquire(gate, signals, output, run.request,
                run.no_wait ? Asking::now_to_run : Asking::for_the_next, left, run.jitter);
    if (acquired.signal != 0 || !acquired.decision.allowed) {
      slots->finish();
      return acquired.signal != 0 ? 128 + acquired.signal : output.limited_exit_code;
    }
    grant = acquired.decision.grant.seq;
  } else {
    // Granted by the slots alone: no decision of a rate counts it.
    count_on_slots(store, run, true, slot.slept ? slot.waited : 0);
    report_start(output, local_fallback, run, caps, slot.waited);
  }
  return std::nullopt;
}

} // namespace

std::vector<core::RunCap> run_caps(const HoldingRun& run) {
  std::vector<core::RunCap> caps;
  if (run.until_exit) {
    for (const core::Limit& limit : run.request.limits) {
      caps.push_back({limit.rate.count, limit.rate.period});
    }
  }
  if (run.concurrency > 0) {
    caps.push_back({run.concurrency, 0});
  }
  return caps;
}

int run_holding(const HoldingRun& run, StoreOpener& stores, const OutputSettings& output) {
  std::vector<core::RunCap> caps = run_caps(run);
  RetryOptions no_retry;
  RetryingRuns runs(run.retry ? *run.retry : no_retry, stores, output, run.request.key,
                    run.command);
  HoldingRun attempt = run;
  std::unique_ptr<store::Store> store;
  util::InterruptSignals signals;
  for (;;) {
    std::unique_ptr<store::RunSlots> slots;
    std::optional<std::int64_t> grant;
    try {
      if (!store) {
        store = stores.open();
      }
      if (std::optional<int> status = take_slot(*store, slots, signals, output,
                                                stores.local_fallback(), attempt, caps, grant)) {
        return *status;
      }
    } catch (const store::StoreError& error) {
      // A place the store gave before it failed stays taken there until its lease runs out,
      // which never over-admits.
      slots.reset();
      if (stores.falls_back_locally(error)) {
        store = stores.fall_back_locally(error);
        if (std::optional<int> status = take_slot(*store, slots, signals, output,
                                                  stores.local_fallback(), attempt, caps, grant)) {
          return *status;
        }
      } else if (!stores.fail_open(error)) {
        throw;
      }
    }
    if (!check_stdout()) {
      if (slots) {
        slots->finish();
      }
      throw OutputError();
    }
    if (grant) {
      ::setenv("RATELIMIT_GRANT", std::to_string(*grant).c_str(), 1);
    } else {
      ::unsetenv("RATELIMIT_GRANT");
    }
    signals.restore();
    ChildRun child;
    try {
      core::Nanos lease = slots ? slots->lease() : 0;
      child = runs.run(
          grant,
          [&] {
            try {
              slots->renew();
            } catch (const store::StoreError& error) {
              util::write_stderr(
                  fmt::format("ratelimit: warning: cannot renew the slot: {}\n", error.what()));
            }
          },
          lease / 3);
    } catch (const std::runtime_error& error) {
      if (slots) {
        slots->finish();
      }
      util::write_stderr(fmt::format("ratelimit: {}\n", error.what()));
      return k_exit_wrapper_failure;
    }
    signals.block();
    if (slots) {
      try {
        slots->finish();
      } catch (const store::StoreError& error) {
        util::write_stderr(
            fmt::format("ratelimit: warning: cannot free the slot: {}\n", error.what()));
      }
    }
    if (!runs.again(child)) {
      return child.status;
    }
    // A retry waits for its slot after the pause, even under --no-wait: the pause is why it
    // was made.
    attempt.no_wait = false;
  }
}

} // namespace ratelimit::cli

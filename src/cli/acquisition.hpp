#pragma once

#include "cli/gate.hpp"
#include "core/decide.hpp"
#include "store/run_slots.hpp"

#include <functional>
#include <limits>
#include <optional>
#include <string>

namespace ratelimit::cli {

// The clock and the sleeps of an acquisition: the system's for the commands, a virtual one
// in tests, so that the loop is tested without sleeping.
class Sleeper {
public:
  virtual ~Sleeper() = default;

  // A monotonic clock, in nanoseconds.
  virtual core::Nanos now() = 0;

  // Sleeps `duration` nanoseconds; returns 0 after the whole sleep, or, when something ended
  // it early (a signal, the reader of the output gone), a code of the caller's other than 0.
  virtual int sleep(core::Nanos duration) = 0;
};

// What to ask of a gate.
struct SlotAsk {
  std::int64_t cost = 1;
  // false: decided at once (`try`, `run --no-wait`); true: the next slot is reserved.
  bool reserve = true;
  // With `reserve`: the longest wait for the slot, from the first reservation on, the sleeps
  // for a pause included; a slot further away is refused, not reserved.
  core::Nanos max_wait = std::numeric_limits<core::Nanos>::max();
  // A refusal whose wait is within `max_wait` (a full leaky-bucket queue takes requests
  // again then) sleeps that long and asks again, rather than ending the loop.
  bool ask_again_after_refusal = false;
  // The command reports its answer: core::Request::answer_wait is core::k_answer_wait.
  bool awaits_answer = false;
  // A slot that has to be waited for is taken `jitter` later (--jitter: its longest, times a
  // fraction in [0, 1) drawn by the caller), so that waiters held together do not all start
  // at once: the sleep is longer, the slot the same.
  core::Nanos jitter = 0;
};

// More slots reserved together with the first one, when it has to wait: given the first's
// wait and the `max_wait` left, a decision whose grant is given back with the first's (or
// nothing). `pipe` batches the records that fall due together this way.
using ReserveMore =
    std::function<std::optional<core::Decision>(core::Nanos first_wait, core::Nanos max_wait)>;

// What an acquisition ended with.
struct Acquisition {
  // The last decision: the slot granted, or why not.
  core::Decision decision;
  // What `ReserveMore` reserved with the slot granted.
  std::optional<core::Decision> more;
  // From the first sleep until the slot or the refusal, by the sleeper's clock (its pause
  // checks and decisions after it included); 0 when it did not sleep.
  core::Nanos waited = 0;
  // The sleeper's code for a sleep ended early (its reservations given back), or 0.
  int interrupted = 0;
  // The error of a store that could not be asked for a pause on waking: the slot it had
  // granted stands all the same (the caller says so); empty when it was asked, or need not.
  std::string pause_unchecked;
};

// Takes a slot of `gate` as `ask` says: reserves the next one and sleeps until it (and its
// jitter, when it had to wait); then,
// as a pause may have begun meanwhile (only a waiter that slept can have missed one: a
// decision sees every pause), asks the gate once whether one runs. If so, gives the slot back
// and reserves the next one after the pause in its place, as the limits place it then, and
// sleeps again: the waiters a pause held do not all go at its end. A sleep ended early
// gives back what was reserved. Sleeps of store::k_long_sleep or more close the gate's
// connections first. A store error from the gate propagates, but from the check for a
// pause, which cannot take back a slot the store granted: see `pause_unchecked`.
Acquisition acquire_slot(Gate& gate, Sleeper& sleeper, const SlotAsk& ask,
                         const ReserveMore& reserve_more = {});

// A place in the queue of a key's run slots (`run -j`, `run --until-exit`), as the waiter
// for a start sees it.
class RunSlotQueue {
public:
  virtual ~RunSlotQueue() = default;

  // Tries to start: joins the queue the first time (RunSlots::join), then RunSlots::try_start.
  virtual store::StartAnswer attempt() = 0;

  // Sleeps until the slots may have changed, `timeout` at most (RunSlots::wait_for_change);
  // returns 0, or the code of what ended the sleep (a signal).
  virtual int wait_for_change(core::Nanos timeout) = 0;
};

// What waiting for a run slot ended with.
struct RunSlotWait {
  bool started = false;
  // Not started: the last answer, and whether it was refused for --timeout.
  store::StartAnswer answer;
  bool timed_out = false;
  // The code of a sleep ended early, or 0.
  int interrupted = 0;
  // From the first attempt until the start, by the clock of `clock`.
  core::Nanos waited = 0;
  // Whether it slept before it started, rather than start at the first attempt.
  bool slept = false;
};

// Waits for a start on `queue` within `max_wait` (at once with `no_wait`): sleeps until a
// known release or the end of a pause, or until the slots change when only a holder's exit
// can free one; a start further away than what is left of `max_wait` is refused at once,
// and so is one blocked when nothing is left. The caller leaves the queue when it did not
// start. Commands are started in arrival order (`behind`: others came first).
RunSlotWait wait_for_run_slot(RunSlotQueue& queue, Sleeper& clock, core::Nanos max_wait,
                              bool no_wait);

} // namespace ratelimit::cli

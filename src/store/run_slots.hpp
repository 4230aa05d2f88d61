#pragma once

#include "core/run_slots.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::util {
class InterruptSignals;
}

namespace ratelimit::store {

// What an attempt to start a command on a key's run slots found.
struct StartAnswer {
  bool started = false;
  // Not started because commands that came first still wait (arrival order).
  bool behind = false;
  // Not started and not behind: when the caps allow the start.
  core::RunAdmission admission;
  // The store's clock at the attempt.
  core::Nanos now = 0;
};

// A command on a key's run slots, as `status` shows it.
struct RunEntry {
  std::string key;
  std::int64_t pid = 0;
  std::string host;
  std::int64_t cost = 1;
  // Running since (store clock); waiting: since it came.
  core::Nanos since = 0;
  bool running = false;
};

// One command's place on the run slots of a key (`run -j`, `run --until-exit`): it joins the
// key's queue, starts when it heads the queue and the caps allow it, and holds its slot
// until it finishes (and, under a cap with a hold, for that long after). Each call is one
// atomic transaction of the store; nothing is locked between calls, so a caller sleeps
// between them. A holder or waiter that dies frees its place: on one host as soon as it
// dies, across hosts when its lease runs out (see `lease`).
class RunSlots {
public:
  virtual ~RunSlots() = default;

  // Joins the queue of `key` for a command of `cost` whose slots are held `hold` after its
  // exit at most (the longest hold of its caps), and makes a first attempt as `try_start`.
  virtual StartAnswer join(std::string_view key, std::int64_t cost, core::Nanos hold,
                           std::span<const core::RunCap> caps) = 0;

  // Starts the command if it heads the queue and `caps` allow it now (see core::admit_run).
  virtual StartAnswer try_start(std::span<const core::RunCap> caps) = 0;

  // Sleeps until the key's holders or queue may have changed, `timeout` at most, or one of
  // `signals` arrives; returns that signal, or 0. Wakes without polling the store.
  virtual int wait_for_change(core::Nanos timeout, util::InterruptSignals& signals) = 0;

  // Leaves the queue without starting.
  virtual void leave() = 0;

  // The command has exited: its slots are free, now or `hold` from now.
  virtual void finish() = 0;

  // How long a holder counts as alive without renewing (0: liveness needs no renewal).
  virtual core::Nanos lease() const { return 0; }

  // Renews the lease of the running command.
  virtual void renew() {}
};

} // namespace ratelimit::store

#pragma once

#include "cli/gate.hpp"
#include "cli/limit_options.hpp"
#include "cli/output_settings.hpp"
#include "cli/store_opener.hpp"
#include "store/store.hpp"
#include "util/signals.hpp"

#include <optional>
#include <string>

namespace ratelimit::cli {

struct Acquired {
  core::Decision decision;
  // The time actually slept until the slot.
  core::Nanos waited = 0;
  // A signal that interrupted the sleep (the reservation was given back), or 0.
  int signal = 0;
  // The store failed and --on-store-error=allow decided the request without it.
  bool failed_open = false;
};

// How a command asks for its slot.
enum class Asking {
  now,          // try: decides at once
  now_to_run,   // run --no-wait: decides at once; reports waited_ms 0, as every run does
  for_the_next, // wait, run: reserves the next slot within the timeout, sleeps until it
};

// Asks `gate` for a slot as `asking` says, within `max_wait` when it reserves, with the one
// acquisition loop (acquire_slot) on the system's clock: a signal in the sleep ends it (the
// reservation given back), and a countdown shows on a terminal (unless -q). A slot it waits
// for is taken up to `jitter` later (a random part of it; --jitter). Reports the decision
// (stderr line, --json) itself as `output` says, and warns when the slot goes ahead unchecked
// for a pause.
Acquired acquire(Gate& gate, util::InterruptSignals& signals, const OutputSettings& output,
                 const LimitedRequest& request, Asking asking, core::Nanos max_wait,
                 core::Nanos jitter = 0);

// Opens the store of `stores` and acquires `request` from it as `acquire` does, through a
// FailOpenGate: a StoreError propagates under --on-store-error=deny; under allow the request
// is decided without the store, with a warning (see StoreOpener::fail_open); under local an
// outage of the store sends the request to the local database, with a warning (see
// StoreOpener::fall_back_locally).
Acquired acquire_from_store(StoreOpener& stores, const OutputSettings& output,
                            util::InterruptSignals& signals, const LimitedRequest& request,
                            Asking asking, core::Nanos max_wait, core::Nanos jitter = 0);

// A random part of --jitter `longest` for one acquisition: uniform in [0, longest).
core::Nanos draw_jitter(core::Nanos longest);

// Parses --jitter (not given: none), a duration; throws UsageError.
core::Nanos parse_jitter(const std::optional<std::string>& text);

// Parses --timeout (not given: no limit); throws UsageError.
core::Nanos parse_timeout(const std::optional<std::string>& text);

} // namespace ratelimit::cli

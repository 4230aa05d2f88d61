#pragma once

#include "cli/global_options.hpp"
#include "cli/limit_options.hpp"
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
  // The store failed and --on-store-error=allow granted the request without it.
  bool failed_open = false;
};

// Asks for a slot and, when it is reserved in the future, sleeps until it. `reserve` false
// decides at once (try); true reserves the next slot within `max_wait`. A signal in the
// sleep gives the reservation back. Reports the decision (stderr line, --json) itself.
Acquired acquire(store::Store& store, util::InterruptSignals& signals, const GlobalOptions& global,
                 const LimitedRequest& request, bool reserve, core::Nanos max_wait);

// Opens the store `global` names, acquires `request` from it as `acquire` does, and closes
// it. A StoreError propagates under --on-store-error=deny; under allow the request is
// granted at once without the store, with a warning (see `fail_open`).
Acquired acquire_from_store(const GlobalOptions& global, util::InterruptSignals& signals,
                            const LimitedRequest& request, bool reserve, core::Nanos max_wait);

// What --on-store-error says about `error`: under allow, prints one warning line on stderr
// and returns true (go on without the store); under deny returns false (fail, status 3).
bool fail_open(const GlobalOptions& global, const store::StoreError& error);

// Parses --timeout (not given: no limit); throws UsageError.
core::Nanos parse_timeout(const std::optional<std::string>& text);

} // namespace ratelimit::cli

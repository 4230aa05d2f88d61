#pragma once

#include "cli/global_options.hpp"
#include "cli/limit_options.hpp"
#include "store/store.hpp"
#include "util/signals.hpp"

#include <optional>

namespace ratelimit::cli {

struct Acquired {
  core::Decision decision;
  // The time actually slept until the slot.
  core::Nanos waited = 0;
  // A signal that interrupted the sleep (the reservation was given back), or 0.
  int signal = 0;
};

// Asks for a slot and, when it is reserved in the future, sleeps until it. `reserve` false
// decides at once (try); true reserves the next slot within `max_wait`. A signal in the
// sleep gives the reservation back. Reports the decision (stderr line, --json) itself.
Acquired acquire(store::Store& store, util::InterruptSignals& signals, const GlobalOptions& global,
                 const LimitedRequest& request, bool reserve, core::Nanos max_wait);

// Parses --timeout (empty: no limit); throws UsageError.
core::Nanos parse_timeout(const std::string& text);

} // namespace ratelimit::cli

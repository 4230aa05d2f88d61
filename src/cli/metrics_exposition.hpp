#pragma once

#include "store/run_slots.hpp"
#include "store/store.hpp"

#include <string>
#include <vector>

namespace ratelimit::cli {

// Every key's counters and standing in the Prometheus text exposition format (version
// 0.0.4): the counters of `counters`, the gauges of each key of `statuses` whose state is not
// damaged (what it has left, the seconds left of its pause, 0 when none), and the commands
// running on the run slots of `entries` for each key there, in `statuses` or in `counters`
// (0 when none).
std::string metrics_exposition(const std::vector<store::NamedCounters>& counters,
                               const std::vector<store::KeyStatus>& statuses,
                               const std::vector<store::RunEntry>& entries);

} // namespace ratelimit::cli

#pragma once

#include "core/limit.hpp"
#include "sim/arrival.hpp"
#include "sim/recommend.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ratelimit::sim {

// try: a request is granted now or denied (`ratelimit try`). wait: it reserves its slot,
// however far away, and waits for it (`ratelimit wait` without --timeout).
enum class Mode { try_now, wait };

std::string_view mode_name(Mode mode);

// The limits of the simulated key, all applied at once as by `ratelimit -r ... -r ...`.
// They must have passed `core::check_limits` for every algorithm simulated and the largest
// cost. The first limit is the reference: `peak_per_period` and the recommendation use it.
struct Settings {
  std::vector<core::Limit> limits;
  Mode mode = Mode::try_now;
};

// `granted_at` of a denied arrival.
inline constexpr core::Nanos k_denied = -1;

// What one algorithm made of the arrivals. Admissions are counted in requests
// (`admitted`, `denied`) and in units of cost (`peak_per_period`, `admissions`), the unit
// of a limit's N.
struct Run {
  core::Algorithm algorithm = core::Algorithm::token_bucket;
  // Per arrival: when it was granted on the virtual clock, or `k_denied`.
  std::vector<core::Nanos> granted_at;
  std::int64_t admitted = 0;
  std::int64_t denied = 0;
  // The cost of the admitted requests, in the unit of `peak_per_period`.
  std::int64_t admitted_cost = 0;
  // The most cost granted in any half-open interval as long as the reference PERIOD.
  std::int64_t peak_per_period = 0;
  // Between arrival and grant, over the admitted requests; 0 in try mode.
  core::Nanos max_wait = 0;
  core::Nanos mean_wait = 0;
  // The per-key memory the algorithm needed at its peak: its fixed state per limit, plus
  // for the sliding log 16 bytes per log entry at the most entries held at once.
  std::int64_t state_bytes = 0;
  // Cost granted per time bucket (see `Comparison::bucket_width`), by grant time.
  std::vector<std::int64_t> admissions;
};

// The latest virtual time a simulation may reach, about 100 years: far inside Nanos.
inline constexpr core::Nanos k_max_virtual_time = 10 * core::k_max_duration;

// Why `arrivals` cannot be simulated under `settings`, or nothing: in wait mode a backlog
// that could queue grants past `k_max_virtual_time`.
std::optional<std::string> check_backlog(std::span<const Arrival> arrivals,
                                         const Settings& settings);

// Runs `arrivals` (in time order, times from 0) through `core::decide` with a
// `core::MemoryGrantLog` on a virtual clock: the code that enforces limits, minus the store.
// Fills everything but `admissions`.
Run run(core::Algorithm algorithm, std::span<const Arrival> arrivals, const Settings& settings);

struct Comparison {
  std::vector<Run> runs; // in the order asked for
  // The time covered by each bucket of `Run::admissions`, from 0.
  core::Nanos bucket_width = 0;
  Recommendation recommendation;
};

// Buckets for the admissions series at most; the width is rounded up to a round number.
inline constexpr std::int64_t k_max_buckets = 40;

// Runs every algorithm of `algorithms` over `arrivals` and adds the admission series, on
// one time scale for all, over [0, max(`horizon`, the last arrival or grant)], and the
// recommendation (which runs the fixed window too when it is not asked for).
Comparison compare(std::span<const Arrival> arrivals, std::span<const core::Algorithm> algorithms,
                   const Settings& settings, core::Nanos horizon = 0);

// `series` as a line of block characters ▁▂▃▄▅▆▇█ in UTF-8, one per value: 0 is ▁ and any
// other value rises in proportion to `max` (the largest of all lines drawn together), so
// that a non-zero value never looks like nothing.
std::string sparkline(std::span<const std::int64_t> series, std::int64_t max);

} // namespace ratelimit::sim

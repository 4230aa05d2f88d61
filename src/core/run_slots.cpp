#include "core/run_slots.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace ratelimit::core {

namespace {

// When `holder`'s slot under a cap of `hold` is free again; max when it runs.
Nanos release_time(const RunHolder& holder, Nanos hold) {
  if (!holder.ended) {
    return std::numeric_limits<Nanos>::max();
  }
  // Saturating: a hold near the end of time never wraps into the past.
  return *holder.ended > std::numeric_limits<Nanos>::max() - hold
             ? std::numeric_limits<Nanos>::max() - 1
             : *holder.ended + hold;
}

// One cap's answer: now, at a known time, or only once some running holder exits.
RunAdmission admit_under(std::span<const RunHolder> holders, const RunCap& cap, std::int64_t cost,
                         Nanos now) {
  std::int64_t running = 0;
  // Holders that have exited but still hold: their release times and weights.
  std::vector<std::pair<Nanos, std::int64_t>> releases;
  for (const RunHolder& holder : holders) {
    if (!holder.ended) {
      running += holder.cost;
      continue;
    }
    Nanos release = release_time(holder, cap.hold);
    if (release > now) {
      releases.emplace_back(release, holder.cost);
    }
  }
  if (running + cost > cap.count) {
    return {Admission::on_exit, 0, 0, 0};
  }
  std::int64_t held = running;
  for (const auto& release : releases) {
    held += release.second;
  }
  if (held + cost <= cap.count) {
    return {Admission::now, now, 0, 0};
  }
  // The slot [s, release) is half-open: from its release time on, it is free.
  std::sort(releases.begin(), releases.end());
  for (const auto& [release, weight] : releases) {
    held -= weight;
    if (held + cost <= cap.count) {
      return {Admission::at, release, 0, 0};
    }
  }
  return {Admission::at, releases.back().first, 0, 0}; // unreachable: running + cost fits
}

} // namespace

RunAdmission admit_run(std::span<const RunHolder> holders, std::span<const RunCap> caps,
                       std::int64_t cost, Nanos now, Nanos paused_until) {
  if (paused_until > now) {
    // The caps are asked again at the pause's end: holders may come and go until then.
    return {Admission::at, paused_until, 0, paused_until};
  }
  RunAdmission result{Admission::now, now, 0, 0};
  for (std::size_t i = 0; i < caps.size(); ++i) {
    RunAdmission under = admit_under(holders, caps[i], cost, now);
    under.binding = i;
    if (under.admission == Admission::on_exit) {
      // Waiting for an exit; a known release under another cap comes with it anyway.
      if (result.admission != Admission::on_exit) {
        result = under;
      }
    } else if (under.admission == Admission::at && result.admission != Admission::on_exit &&
               (result.admission == Admission::now || under.at > result.at)) {
      result = under;
    }
  }
  return result;
}

bool run_released(const RunHolder& holder, Nanos longest_hold, Nanos now) {
  return release_time(holder, longest_hold) <= now;
}

std::int64_t run_weight(std::span<const RunHolder> holders, const RunCap& cap, Nanos now) {
  std::int64_t weight = 0;
  for (const RunHolder& holder : holders) {
    if (holder.started <= now && release_time(holder, cap.hold) > now) {
      weight += holder.cost;
    }
  }
  return weight;
}

} // namespace ratelimit::core

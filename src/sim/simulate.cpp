#include "sim/simulate.hpp"

#include "core/decide.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <optional>

namespace ratelimit::sim {

namespace {

using core::Algorithm;
using core::Nanos;

// A sliding-log entry: the grant's time and the cumulative cost through it.
constexpr std::int64_t k_log_entry_bytes = 16;

// The bytes of per-limit state each algorithm reads and writes (see core/*.cpp), a sliding
// log's entries apart.
std::int64_t fixed_state_bytes(Algorithm algorithm) { return core::info(algorithm).state_bytes; }

// The most cost granted in any half-open interval of `period`. Grants of one key are made in
// time order (core/rules.hpp), so this walks them in place; a sorted copy is only a safeguard.
std::int64_t peak_of_grants(std::span<const Arrival> arrivals, std::span<const Nanos> granted_at,
                            Nanos period) {
  std::int64_t peak = 0;
  std::int64_t inside = 0;
  std::size_t first = 0;
  Nanos last = 0;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    Nanos at = granted_at[i];
    if (at == k_denied) {
      continue;
    }
    if (at < last) {
      std::vector<Arrival> events;
      for (std::size_t j = 0; j < arrivals.size(); ++j) {
        if (granted_at[j] != k_denied) {
          events.push_back({granted_at[j], arrivals[j].cost});
        }
      }
      std::stable_sort(events.begin(), events.end(),
                       [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
      return peak_per_period(events, period);
    }
    last = at;
    inside += arrivals[i].cost;
    for (; at - granted_at[first] >= period || granted_at[first] == k_denied; ++first) {
      if (granted_at[first] != k_denied) {
        inside -= arrivals[first].cost;
      }
    }
    peak = std::max(peak, inside);
  }
  return peak;
}

// 1, 2, 2.5 or 5 times a power of ten, at least `width`: bucket widths a reader can add up.
Nanos round_width(Nanos width) {
  for (Nanos power = 1; power <= std::numeric_limits<Nanos>::max() / 50; power *= 10) {
    for (Nanos candidate : {power, 2 * power, 5 * power / 2, 5 * power}) {
      if (candidate >= width) {
        return candidate;
      }
    }
  }
  return width;
}

} // namespace

std::string_view mode_name(Mode mode) {
  return mode == Mode::wait ? "wait" : "try";
}

std::optional<std::string> check_backlog(std::span<const Arrival> arrivals,
                                         const Settings& settings) {
  if (settings.mode != Mode::wait || arrivals.empty()) {
    return std::nullopt;
  }
  core::Wide total_cost = 0;
  for (const Arrival& arrival : arrivals) {
    total_cost += arrival.cost;
  }
  for (const core::Limit& limit : settings.limits) {
    // A generous bound for every algorithm: each N of cost waits at most two PERIODs, and
    // rounding adds at most a nanosecond per unit.
    core::Wide periods = 2 * (total_cost / limit.rate.count + 1);
    core::Wide latest = core::Wide{arrivals.back().at} + periods * limit.rate.period + total_cost;
    if (latest > k_max_virtual_time) {
      return fmt::format("in wait mode, {} requests under {} could queue grants more than 100 "
                         "years ahead; simulate fewer arrivals or use --mode try",
                         arrivals.size(), core::format_rate(limit.rate));
    }
  }
  return std::nullopt;
}

Run run(Algorithm algorithm, std::span<const Arrival> arrivals, const Settings& settings) {
  Run result;
  result.algorithm = algorithm;
  result.granted_at.resize(arrivals.size(), k_denied);
  core::KeyState state;
  state.algorithm = algorithm;
  core::MemoryGrantLog log;
  std::size_t most_entries = 0;
  core::Wide total_wait = 0;
  core::Request request;
  request.reserve = settings.mode == Mode::wait;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    request.now = arrivals[i].at;
    request.cost = arrivals[i].cost;
    core::Decision decision = core::decide(state, settings.limits, log, request);
    if (!decision.allowed) {
      ++result.denied;
      continue;
    }
    ++result.admitted;
    result.admitted_cost += arrivals[i].cost;
    result.granted_at[i] = decision.grant.at;
    Nanos wait = decision.grant.at - arrivals[i].at;
    result.max_wait = std::max(result.max_wait, wait);
    total_wait += wait;
    if (algorithm == Algorithm::sliding_log) {
      most_entries = std::max(most_entries, log.size());
    }
  }
  if (result.admitted > 0) {
    result.mean_wait = static_cast<Nanos>(total_wait / result.admitted);
  }
  result.state_bytes =
      fixed_state_bytes(algorithm) * static_cast<std::int64_t>(settings.limits.size()) +
      static_cast<std::int64_t>(most_entries) * k_log_entry_bytes;
  result.peak_per_period =
      peak_of_grants(arrivals, result.granted_at, settings.limits.front().rate.period);
  return result;
}

Comparison compare(std::span<const Arrival> arrivals, std::span<const Algorithm> algorithms,
                   const Settings& settings, Nanos horizon) {
  Comparison comparison;
  std::optional<std::int64_t> fixed_window_peak;
  for (Algorithm algorithm : algorithms) {
    comparison.runs.push_back(run(algorithm, arrivals, settings));
    if (algorithm == Algorithm::fixed_window && settings.mode == Mode::try_now) {
      fixed_window_peak = comparison.runs.back().peak_per_period;
    }
  }
  // The recommendation reads the shape of the traffic, so it asks whether fixed windows let
  // a boundary burst through of the arrivals as `try` meets them. In wait mode every
  // overload queues up and leaves at a window's start, a boundary burst whatever the shape.
  if (!fixed_window_peak) {
    Settings as_tried = settings;
    as_tried.mode = Mode::try_now;
    fixed_window_peak = run(Algorithm::fixed_window, arrivals, as_tried).peak_per_period;
  }
  // The recommendation must agree with the table: it reads every algorithm's figures,
  // running those not asked for.
  std::vector<Outcome> outcomes;
  for (Algorithm algorithm : core::k_all_algorithms) {
    auto asked = std::find_if(comparison.runs.begin(), comparison.runs.end(),
                              [&](const Run& one) { return one.algorithm == algorithm; });
    Run other;
    if (asked == comparison.runs.end()) {
      other = run(algorithm, arrivals, settings);
    }
    const Run& figures = asked == comparison.runs.end() ? other : *asked;
    outcomes.push_back({algorithm, figures.peak_per_period, figures.denied});
  }
  comparison.recommendation = recommend(arrivals, settings.limits, *fixed_window_peak, outcomes,
                                        settings.mode == Mode::wait);

  Nanos end = arrivals.empty() ? 0 : arrivals.back().at;
  for (const Run& one : comparison.runs) {
    for (Nanos at : one.granted_at) {
      end = std::max(end, at);
    }
  }
  // The series covers [0, horizon): the last event must fall inside it.
  horizon = std::max(horizon, end + 1);
  comparison.bucket_width = round_width(core::ceil_div(horizon, k_max_buckets));
  auto buckets = static_cast<std::size_t>(core::ceil_div(horizon, comparison.bucket_width));
  for (Run& one : comparison.runs) {
    one.admissions.assign(buckets, 0);
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
      if (one.granted_at[i] != k_denied) {
        one.admissions[static_cast<std::size_t>(one.granted_at[i] / comparison.bucket_width)] +=
            arrivals[i].cost;
      }
    }
  }
  return comparison;
}

std::string sparkline(std::span<const std::int64_t> series, std::int64_t max) {
  static constexpr std::string_view k_blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::string line;
  line.reserve(series.size() * 3);
  for (std::int64_t value : series) {
    std::size_t level = 0;
    if (value > 0 && max > 0) {
      // 1..7 in proportion, rounded up, so the largest value is a full block.
      level = static_cast<std::size_t>(core::ceil_div(core::Wide{value} * 7, max));
      level = std::min<std::size_t>(level, 7);
    }
    line += k_blocks[level];
  }
  return line;
}

} // namespace ratelimit::sim

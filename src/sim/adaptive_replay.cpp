#include "sim/adaptive_replay.hpp"

#include "core/adaptive_rate.hpp"
#include "sim/random.hpp"

#include <algorithm>
#include <queue>

namespace ratelimit::sim {

namespace {

using core::Nanos;

// The core reads a time of 0 as "never": virtual time starts here for it.
constexpr Nanos k_origin = 1'000'000'000 * core::k_nanos_per_second;

// The buckets of the rate over time, at most.
constexpr std::int64_t k_max_samples = 40;

// The server: fixed windows of its current limit's period, counted from 0.
class Server {
public:
  explicit Server(const std::vector<ServerLimit>& limits) : m_limits(limits) {}

  // Whether a request arriving at `at` is served; when it is not, `retry_after` gets the
  // whole seconds to the end of the window, rounded up, as Retry-After says them.
  bool answer(Nanos at, Nanos& retry_after) {
    const ServerLimit& limit = limit_at(at);
    std::int64_t window = (at - limit.from) / limit.rate.period;
    if (&limit != m_limit || window != m_window) {
      m_limit = &limit;
      m_window = window;
      m_count = 0;
    }
    if (m_count < limit.rate.count) {
      ++m_count;
      return true;
    }
    Nanos end = limit.from + (window + 1) * limit.rate.period;
    retry_after = core::ceil_div(end - at, core::k_nanos_per_second) * core::k_nanos_per_second;
    return false;
  }

  const ServerLimit& limit_at(Nanos at) const {
    auto later = std::upper_bound(m_limits.begin(), m_limits.end(), at,
                                  [](Nanos t, const ServerLimit& l) { return t < l.from; });
    return *std::prev(later);
  }

private:
  const std::vector<ServerLimit>& m_limits;
  const ServerLimit* m_limit = nullptr;
  std::int64_t m_window = -1;
  std::int64_t m_count = 0;
};

// What happens next to a worker: it asks the key for a slot, or its call is answered.
struct Event {
  Nanos at = 0;
  bool answer = false;
  std::int64_t worker = 0;
  bool throttled = false; // an answer's: 429
  // Answers before requests at the same time: what the server said is known first.
  bool operator>(const Event& other) const {
    if (at != other.at) {
      return at > other.at;
    }
    if (answer != other.answer) {
      return !answer;
    }
    return worker > other.worker;
  }
};

// When the last call could be served at the soonest: each window of the server's filled at
// its start.
Nanos least_duration(const AdaptiveSpec& spec) {
  Server server(spec.server);
  Nanos at = 0;
  Nanos retry_after = 0;
  for (std::int64_t left = spec.calls; left > 0;) {
    if (server.answer(at, retry_after)) {
      --left;
      continue;
    }
    const ServerLimit& limit = server.limit_at(at);
    Nanos window_end = limit.from + ((at - limit.from) / limit.rate.period + 1) * limit.rate.period;
    auto next = std::upper_bound(spec.server.begin(), spec.server.end(), at,
                                 [](Nanos t, const ServerLimit& l) { return t < l.from; });
    at = next == spec.server.end() ? window_end : std::min(window_end, next->from);
  }
  return at;
}

} // namespace

AdaptiveReplay replay_adaptive(const AdaptiveSpec& spec) {
  AdaptiveReplay replay;
  replay.calls = spec.calls;
  replay.least_duration = least_duration(spec);
  Server server(spec.server);
  SplitMix64 random(spec.seed);

  // The key: its adaptive state, its next free slot and its pause.
  core::AdaptiveState state;
  Nanos next_slot = 0;
  Nanos paused_until = 0;
  // The state after each change, to read the rate at any time afterwards.
  std::vector<std::pair<Nanos, core::AdaptiveState>> history{{0, state}};
  std::vector<std::pair<Nanos, bool>> answers; // time, throttled, for the samples

  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::vector<std::int64_t> retries(static_cast<std::size_t>(spec.workers), 0);
  std::int64_t started = 0;
  for (std::int64_t w = 0; w < spec.workers && started < spec.calls; ++w, ++started) {
    events.push({0, false, w});
  }
  while (!events.empty()) {
    Event event = events.top();
    events.pop();
    if (!event.answer) {
      // A reservation, as `wait` makes it: the slot after the key's last, at the rate now.
      Nanos slot = std::max({event.at, next_slot, paused_until});
      next_slot = slot + core::adaptive_interval(state, spec.ceiling, k_origin + event.at, 1);
      Nanos spread =
          spec.latency / 2 + static_cast<Nanos>(random.unit() * static_cast<double>(spec.latency));
      Nanos retry_after = 0;
      bool served = server.answer(slot, retry_after);
      Nanos answered = slot + spread;
      answers.emplace_back(answered, !served);
      if (!served) {
        // The pause starts when the answer is read; it never shortens one running.
        paused_until = std::max(paused_until, answered + retry_after);
      }
      events.push({answered, true, event.worker, !served});
      continue;
    }
    bool throttled = event.throttled;
    core::AdaptiveState next =
        core::adapt(state, spec.ceiling,
                    throttled ? core::AdaptiveEvent::throttled : core::AdaptiveEvent::succeeded,
                    k_origin + event.at);
    if (next.cut_at != state.cut_at) {
      ++replay.cuts;
    }
    state = next;
    history.emplace_back(event.at, state);
    replay.duration = std::max(replay.duration, event.at);
    auto& mine = retries[static_cast<std::size_t>(event.worker)];
    if (throttled) {
      ++replay.throttled;
      ++mine;
      replay.most_retries = std::max(replay.most_retries, mine);
      events.push({event.at, false, event.worker});
    } else {
      mine = 0;
      if (started < spec.calls) {
        ++started;
        events.push({event.at, false, event.worker});
      }
    }
  }

  auto state_at = [&](Nanos at) {
    auto after = std::upper_bound(history.begin(), history.end(), at,
                                  [](Nanos t, const auto& h) { return t < h.first; });
    return std::prev(after)->second;
  };
  auto rate_at = [&](Nanos at) {
    return core::effective_micro_rate(state_at(at), spec.ceiling, k_origin + at);
  };
  Nanos width =
      std::max<Nanos>(core::k_nanos_per_second, core::ceil_div(replay.duration, k_max_samples));
  width = core::ceil_div(width, core::k_nanos_per_second) * core::k_nanos_per_second;
  replay.bucket_width = width;
  for (Nanos end = width; end - width < replay.duration || end == width; end += width) {
    AdaptiveSample sample{end, rate_at(end), 0, 0};
    for (const auto& [at, was_throttled] : answers) {
      if (at > end - width && at <= end) {
        ++(was_throttled ? sample.throttled : sample.succeeded);
      }
    }
    replay.samples.push_back(sample);
  }
  for (std::size_t i = 1; i < spec.server.size(); ++i) {
    const ServerLimit& limit = spec.server[i];
    Convergence convergence{limit, -1};
    if (core::micro_rate(limit.rate) > core::micro_rate(spec.server[i - 1].rate)) {
      std::int64_t target = core::micro_rate(limit.rate) / 10 * k_converged_tenths;
      for (Nanos at = limit.from; at <= replay.duration; at += core::k_nanos_per_milli) {
        if (rate_at(at) >= target) {
          convergence.after = at - limit.from;
          break;
        }
      }
      replay.raises.push_back(convergence);
    }
  }
  return replay;
}

} // namespace ratelimit::sim

#pragma once

#include "core/grant_log.hpp"
#include "core/limit.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <span>

namespace ratelimit::core {

// When a request could be granted under one limit.
struct Slot {
  // The earliest grant time, never before `now`; a `try` is granted only when it is `now`.
  Nanos at = 0;
  // A reservation is refused outright before this time (a leaky bucket's full queue).
  Nanos accept_from = std::numeric_limits<Nanos>::min();
};

// What a limit has left at a moment.
struct Usage {
  // Whole units of cost a request could take right now.
  std::int64_t remaining = 0;
  // How long until the state is a fresh key's again.
  Nanos reset_after = 0;
};

// One algorithm, as pure functions of a limit's state. Every `now` is the key's clock.
// Grants are made in order, each `at` not before an earlier grant still standing, with
// two exceptions: when a cancelled reservation returned room, a token bucket or a
// sliding-window counter may grant into it ahead of reservations made after that one,
// which their bounds allow (both count reservations whatever their time); and a call
// naming other limits than a reservation's may be granted before it when its own limits
// allow (but for the sliding log, whose one log keeps every grant in order).
class Rules {
public:
  virtual ~Rules() = default;

  virtual Slot earliest(const Limit& limit, const LimitState& state, GrantLog& log, Nanos now,
                        std::int64_t cost) const = 0;

  // Takes `cost` at `at` (not before `earliest(...).at`); returns the marker that
  // `give_back` needs to find this grant again.
  virtual std::int64_t take(const Limit& limit, LimitState& state, GrantLog& log, Nanos now,
                            Nanos at, std::int64_t cost) const = 0;

  // Returns what the reservation of `cost` at `at` took (`marker` from its `take`), as far
  // as later reservations allow: never so much that the grants still standing exceed the
  // limit. Called at most once per grant.
  virtual void give_back(const Limit& limit, LimitState& state, GrantLog& log, Nanos at,
                         std::int64_t cost, std::int64_t marker) const = 0;

  virtual Usage usage(const Limit& limit, const LimitState& state, GrantLog& log,
                      Nanos now) const = 0;

  // The state for `limit`, which the key does not hold, derived from the `stored` limits
  // (those of its last call, then those it remembers) at `now`: what they have in use
  // carries over, so that a changed limit never makes a key fresh. Conservative: where the
  // stored state cannot tell, it assumes more in use, never less. `granted`: the cost the
  // key has granted since its state was made (KeyState::granted), for the algorithms that
  // count it. `stored` empty: a fresh key's state.
  virtual std::array<std::int64_t, 3> carry(const Limit& limit, std::span<const LimitState> stored,
                                            Nanos now, std::int64_t granted) const = 0;

  // Whether every limit's state is one state of the key (the sliding log: one log, one
  // set of slots); then `take` and `give_back` are called once, for the longest period.
  virtual bool shares_state() const { return false; }

  // Whether the key keeps the limits its last call did not name (KeyState::remembered).
  // Unless the state is shared, every grant is taken from them too, though they decide
  // nothing: the buckets and the windows, whose `take` counts a grant whenever it is made.
  virtual bool remembers_unnamed() const { return false; }

  // Whether the key still needs `remembered`, a limit it remembers, at `now`. By default
  // while it holds something: forgotten, it would be derived from the others as no less.
  virtual bool keeps_remembered(const LimitState& remembered, GrantLog& log, Nanos now) const {
    return usage(remembered.limit, remembered, log, now).reset_after > 0;
  }

  // The earliest time from `at` when a grant of `cost` leaves the grants that a
  // remembered limit judged (`remembered`) within its N; `state` is the call's (shared)
  // state. By default `at`: a remembered limit decides nothing.
  virtual Nanos protect(const LimitState& /*remembered*/, const LimitState& /*state*/,
                        GrantLog& /*log*/, Nanos at, std::int64_t /*cost*/) const {
    return at;
  }

  // Reads `state` as stored by a version that did not keep what a key has granted
  // (KeyState::granted): what its slots meant then, as they mean now, conservatively.
  virtual void read_earlier_version(LimitState& /*state*/) const {}

  // Whether the key counts the cost it has granted (KeyState::granted) for `carry`: the
  // windows, whose states keep only their latest windows and cannot tell what a longer
  // period held before them.
  virtual bool counts_granted() const { return false; }
};

// Where `rescale` saturates: far beyond any time a key can reach (73 years from it).
inline constexpr Nanos k_rescale_saturation = std::numeric_limits<Nanos>::max() / 4;

// `duration` of use at the interval `from`, as a duration at the interval `to`, rounded
// up (a conversion of units in use from one rate to another); saturates at
// k_rescale_saturation.
inline Nanos rescale(Nanos duration, Nanos from, Nanos to) {
  if (duration <= 0) {
    return 0;
  }
  Wide scaled = (Wide{duration} * to + from - 1) / from;
  return scaled > k_rescale_saturation ? k_rescale_saturation : static_cast<Nanos>(scaled);
}

const Rules& rules_for(Algorithm algorithm);

// The start of the window of length `period` that holds `time`; windows are aligned to
// multiples of `period` since the epoch.
inline Nanos window_start(Nanos time, Nanos period) {
  return floor_div(time, period) * period;
}

} // namespace ratelimit::core

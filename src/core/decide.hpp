#pragma once

#include "core/grant_log.hpp"
#include "core/limit.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace ratelimit::core {

// The most limits a key remembers besides those of its last call (KeyState::remembered):
// beyond them the ones named longest ago are forgotten, and a call naming one again derives
// it from the others.
inline constexpr std::size_t k_max_remembered = 16;

struct Request {
  // The caller's clock, in nanoseconds since the epoch.
  Nanos now = 0;
  std::int64_t cost = 1;
  // false: `try`, granted only now. true: `wait`, may reserve a later slot.
  bool reserve = false;
  // With `reserve`: the longest acceptable wait; a later slot is refused, not reserved.
  Nanos max_wait = std::numeric_limits<Nanos>::max();
  // Above 0: the caller will report its request's answer (`run --observe`); until then, and
  // for at most this long after its slot (core::k_answer_wait), the grant counts as on its
  // way to the server for the key's server budget.
  Nanos answer_wait = 0;
  // --adaptive: the limits' rates are ceilings, and the grant is spaced at the rate the key
  // learned from its answers (ServerWord::adaptive, made on the first such call).
  bool adaptive = false;
};

// What a granted reservation took, so that an interrupted waiter can give it back.
struct Grant {
  Nanos at = 0;
  std::int64_t cost = 0;
  std::vector<std::int64_t> markers; // one per limit
  // The key's grant sequence after this grant (ServerWord::grant_seq): what `observe
  // --grant` names the request by.
  std::int64_t seq = 0;
  // --adaptive: the spacing this grant added after its slot (AdaptiveState::next_slot);
  // given back with it.
  Nanos paced = 0;
};

// The state of one limit after a decision.
struct LimitReport {
  std::int64_t remaining = 0;
  Nanos reset_after = 0;
  // Until the request would be granted under this limit alone (0: now).
  Nanos retry_after = 0;
};

// Why a request was refused.
enum class Refusal {
  none,    // granted
  later,   // the earliest slot is later than now (`try`)
  timeout, // the earliest slot is later than the request's `max_wait`
  full,    // a leaky bucket's queue is full, however long the caller would wait
  too_far, // the slot, or what taking it would store, is past k_max_time (bounds.hpp)
};

struct Decision {
  bool allowed = false;
  // The algorithm that decided: the key's.
  Algorithm algorithm = Algorithm::sliding_log;
  Refusal refusal = Refusal::none;
  // The key's clock at the decision; differs from the request's `now` only when the system
  // clock stepped back.
  Nanos now = 0;
  // Granted: how long to sleep until the slot (0 for `try`). Denied: until the request
  // would be granted, rounded up by callers that show it.
  Nanos wait = 0;
  // The limit that decided, an index into the request's limits: the one furthest from
  // granting; for a reservation, the one that set its time; for a grant made at once (all
  // of them agreed), the one with the least remaining.
  std::size_t binding = 0;
  // Whole units available after the decision, under every limit; time until the key is
  // fresh again under every limit.
  std::int64_t remaining = 0;
  Nanos reset_after = 0;
  // The end of the key's pause when one runs at the decision (`wait` reaches at least to
  // it, and `remaining` is 0); else 0.
  Nanos paused_until = 0;
  // The reset of the server budget that held the request's slot back to it (the slot the
  // limits and the pause allowed was past what the server said was left); else 0.
  Nanos budget_until = 0;
  // --adaptive: the rate the key grants at (micro-requests per second), and the slot the
  // spacing at that rate held the request back to (else 0).
  std::int64_t adaptive_rate = 0;
  Nanos spaced_until = 0;
  // The key's server budget after the decision, when a ceiling runs: `remaining` is at most
  // its remaining.
  std::optional<BudgetStanding> budget;
  std::vector<LimitReport> limits;
  Grant grant;
};

// Decides `request` for a key with `state` under `limits` (all or nothing), updating
// `state` and `log` when granted. Pure: the only time is `request.now`. `limits` must have
// passed `check_limits`. While the key is paused a `try` is refused until the pause ends,
// and a reservation's slot is not before its end; a slot past what the server budget holds
// is moved to the reset that admits it (core::budget_open).
Decision decide(KeyState& state, std::span<const Limit> limits, GrantLog& log,
                const Request& request);

// Returns what `grant` reserved, at `now`, to a key whose state has moved on at most by
// later decisions.
void give_back(KeyState& state, std::span<const Limit> limits, GrantLog& log, Nanos now,
               const Grant& grant);

// The key's standing under its stored limits, without changing it: `allowed` and `wait`
// say whether and when a `try` of `cost` would be granted, `remaining` and `reset_after`
// what the key holds at `now` (or at its clock, when that is later).
Decision inspect(const KeyState& state, GrantLog& log, Nanos now, std::int64_t cost = 1);

// What the server word of `state` means to a standing computed without it, as core::inspect
// applies it (the Redis store computes the rest in its script): a slot past the budget moves
// to the reset that admits `cost`; the remaining count is at most the budget's; the key is
// not fresh before its word ends.
void settle_server_word(Decision& standing, const KeyState& state, std::int64_t cost = 1);
// Reads `state` as stored by a version that did not keep KeyState::granted
// (schema version 4 and earlier): for an algorithm that counts it, unknown, any number, and
// each limit's slots as they mean now (Rules::read_earlier_version).
void read_earlier_version(KeyState& state);

// Whether `state` is a fresh key's at `now`: forgetting it would change no decision. A
// paused key is not fresh until its pause ends, nor one with a server budget or an awaited
// answer until they end.
bool is_fresh(const KeyState& state, GrantLog& log, Nanos now);

// Whether the limits of `state` are fresh at `now`, whatever its pause and server word:
// a call naming other limits forgets them, and keeps the key only for what a server said
// (`holds_server_word`).
bool limits_fresh(const KeyState& state, GrantLog& log, Nanos now);

// Whether `state` holds what a server said that still runs at `now`: a pause, a server
// budget, a grant awaiting its answer.
bool holds_server_word(const KeyState& state, Nanos now);

// Pauses the key of `state` from its clock (`now`, or later when the clock stepped back)
// for `duration`: it grants nothing until then. A pause already running that ends later
// is kept: a pause extends one, never shortens it. The end is at most k_max_time. Returns
// the end of the pause.
Nanos pause(KeyState& state, Nanos now, Nanos duration);

// Applies what a server answered to the key of `state` at its clock (`now`, or later when
// the clock stepped back): the pause it asks for (core::pause), then where the quota
// stands, the answered grant and the policies (core::observe_server). Returns the end of
// the key's pause (0 or a past time when none runs).
Nanos observe(KeyState& state, Nanos now, const Observation& observation);

} // namespace ratelimit::core

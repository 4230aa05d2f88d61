#pragma once

// What a key keeps of its servers' word besides a pause: the server budget (where the
// quota stands, as the answers said it), the requests whose answers are awaited, and the
// policies the answers named. Pure: every time is passed in, in nanoseconds since the epoch
// on the key's clock.
//
// The key counts its grants in `grant_seq` (each adds its cost). An answer that says
// `remaining` requests are left until `reset` becomes a ceiling on that count: until the
// reset, the key grants no more than `remaining` less what may reach the server after that
// answer, whatever its limits allow (it only ever tightens). What may still reach the server
// is every grant made after the answer was observed, and every grant still awaiting its own
// answer (run --observe tracks its request from its grant until its answer): one of those
// may have been granted before the answer's request and still be on its way. A grant whose
// slot falls after a reset does not count against the budget that ends there.
//
// Answers never loosen a budget before its reset: each one adds a ceiling, and the lowest
// ceiling still running binds, so that an answer that comes late (from a request that left
// before another's) cannot undo what a newer one said, and an answer observed before its
// neighbours' cannot either. Only a reservation given back before its request left raises
// the ceilings that counted it.

#include "core/adaptive_rate.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ratelimit::core {

// One ceiling: until `reset`, grants (whose slots are before it) take the key's grant
// sequence no higher than `ceiling`.
struct BudgetEntry {
  std::int64_t ceiling = 0;
  Nanos reset = 0;
  friend bool operator==(const BudgetEntry&, const BudgetEntry&) = default;
};

// A grant whose request's answer is awaited: `seq` is the key's grant sequence after it,
// `at` its slot. It stops counting as on its way at `until` (its slot plus the wait its
// caller gave, core::k_answer_wait).
struct AwaitedAnswer {
  std::int64_t seq = 0;
  std::int64_t cost = 0;
  Nanos at = 0;
  Nanos until = 0;
  friend bool operator==(const AwaitedAnswer&, const AwaitedAnswer&) = default;
};

// A quota policy an answer named (RateLimit-Policy, X-RateLimit-Limit): `quota` requests
// per `window` (0: the answer did not say).
struct LearnedPolicy {
  std::string field;
  std::string name;
  std::int64_t quota = 0;
  Nanos window = 0;
  friend bool operator==(const LearnedPolicy&, const LearnedPolicy&) = default;
};

struct ServerWord {
  // The cost of every grant the key has made (since it was created or rebased, see
  // k_max_grant_seq).
  std::int64_t grant_seq = 0;
  // At most k_max_budget_entries, the earliest reset first.
  std::vector<BudgetEntry> budget;
  // At most k_max_awaited_answers, oldest first.
  std::vector<AwaitedAnswer> awaited;
  // At most k_max_policies: those of the last answer that named any.
  std::vector<LearnedPolicy> policies;
  // When the latest answer that said where the quota stands was observed (0: none), and
  // how long the latest answer awaited took from its grant's slot to its observation.
  Nanos answered_at = 0;
  Nanos answer_latency = 0;
  // The rate learned from the answers, for a key that a call with --adaptive has used: its
  // `-r` rates are ceilings, its grants spaced at the learned rate (core/adaptive_rate.hpp).
  std::optional<AdaptiveState> adaptive;
  friend bool operator==(const ServerWord&, const ServerWord&) = default;
};

// How long after its slot a request still counts as on its way to the server when its
// answer has not come (the callers' Request::answer_wait): a server counts a request when it
// arrives, within seconds of its start; a command killed before it could report its answer
// holds the budget no longer.
inline constexpr Nanos k_answer_wait = 60 * k_nanos_per_second;
// An answer says what was left when the server sent it; other clients of the same quota
// spend meanwhile, unseen. Once the latest answer is older than 1/k_stale_fraction of the
// time from it to the budget's last reset (1 s of a 5 s window, 12 min of an hour), one
// grant awaiting its answer goes ahead (a probe) and the next wait for its answer: its slot
// plus 1.5 times the latest answer's latency, and at least 1/k_probe_wait_fraction of that
// time. A waiter that wakes then finds the budget the probe's answer set, overdrawn if less
// was left than was granted (overdrawn_until), and reserves again. Fractions rather than
// durations, so that the Redis script, which counts microseconds, keeps the same rule.
inline constexpr Nanos k_stale_fraction = 5;
inline constexpr Nanos k_probe_wait_fraction = 100;
// Bounds on what a key keeps, so that a decision reads a few hundred bytes at most. Beyond
// them the two ceilings whose resets are nearest merge into one as tight as both (never
// looser), the oldest awaited answer is taken as arrived, and the policies after the first
// few are not kept.
inline constexpr std::size_t k_max_budget_entries = 8;
inline constexpr std::size_t k_max_awaited_answers = 64;
inline constexpr std::size_t k_max_policies = 4;
inline constexpr std::size_t k_max_policy_text = 64;
// The grant sequence stays below 2^52, so that ceilings (a sequence plus a count of at most
// 10^12) are exact in the Redis script's doubles; past it the key's numbers are moved down
// by the sequence, which changes no budget.
inline constexpr std::int64_t k_max_grant_seq = std::int64_t{1} << 52;
// The bounds of a stored ceiling or awaited sequence (2^53, as core::k_max_total).
inline constexpr std::int64_t k_max_ceiling = (std::int64_t{1} << 53) - 1;

// What an answer said about the quota, for `observe_server`: `remaining` requests until
// `reset_after` from the observation's now.
struct SaidStanding {
  std::int64_t remaining = 0;
  Nanos reset_after = 0;
};

// What `observe` applies to a key: what the answer asked for and said.
struct Observation {
  // A pause from the key's now (core::pause), 0 for none.
  Nanos pause = 0;
  // The answer was 429 or 503: the server is overloaded now. Counted per key; the signal a
  // rate that adapts to the server cuts itself on, once per overload (its request's grant
  // sequence tells answers of one overload from those of the next).
  bool throttled = false;
  // An answer came (with any status): one that was not throttled is a success to an
  // adaptive rate. False for an observation that only says a request is no longer awaited.
  bool answered = false;
  // The grant sequence of the request the answer is for (Grant::seq): it no longer awaits
  // its answer. None when unknown (observe without --grant).
  std::optional<std::int64_t> grant;
  std::vector<SaidStanding> standings;
  // Replace the stored policies when not empty.
  std::vector<LearnedPolicy> policies;
};

// Where a key's server budget stands at a moment: whole units it would grant before the
// binding ceiling's reset, and that reset.
struct BudgetStanding {
  std::int64_t remaining = 0;
  Nanos reset = 0;
};

// The earliest time from `from` on at which the budget of `word` admits a grant of `cost`:
// `from`, the reset of a ceiling it would pass, or, when the latest answer is stale, after
// the answer of a probe in flight (k_stale_answer).
Nanos budget_open(const ServerWord& word, Nanos from, std::int64_t cost);

// For a waiter whose grant (sequence `seq`, slot `at`) awaits its answer and who wakes at
// `now`: when the budget is stale and another grant before it went ahead as a probe, the time
// until which it waits for that probe's answer (it gives its grant back and reserves again);
// else 0. Decided when the waiter reserved, the probe rule may not have seen the budget go
// stale while it slept.
Nanos probe_held_until(const ServerWord& word, Nanos now, std::int64_t seq, Nanos at);

// Counts a grant of `cost` at slot `at` made at `now`; `answer_wait` above 0: its request
// will report its answer (run --observe), so it counts as on its way until then, or for that
// long after its slot. Returns the key's grant sequence after it (Grant::seq).
std::int64_t count_grant(ServerWord& word, Nanos now, Nanos at, std::int64_t cost,
                         Nanos answer_wait);

// A grant of `cost` at `at` whose sequence was `seq` given back before its request left:
// when it was awaiting its answer, the ceilings that counted it (those with a later reset)
// are raised by its cost.
void return_grant(ServerWord& word, std::int64_t seq, std::int64_t cost, Nanos at);

// Applies the quota part of `observation` at `now`: the answered grant no longer awaits,
// each standing becomes a ceiling, the policies replace the stored ones.
void observe_server(ServerWord& word, Nanos now, const Observation& observation);

// The binding ceiling at `now`, if any runs.
std::optional<BudgetStanding> budget_standing(const ServerWord& word, Nanos now);

// Whether the budget is overdrawn at `now`: what may still reach the server exceeds what it
// said was left. A waiter that wakes then goes back and reserves again after the reset.
// Returns that reset, or 0.
Nanos overdrawn_until(const ServerWord& word, Nanos now);

// Until when `word` holds anything at `now` (a ceiling, an awaited answer, a learned rate
// below its ceiling or a grant slot it spaces, core::adaptive_until), or `now`: the key is
// not fresh before.
Nanos server_word_until(const ServerWord& word, Nanos now);

// Forgets what has ended by `now`.
void forget_ended(ServerWord& word, Nanos now);

// Whether `word` could have been written by this program: within the bounds above.
bool within_bounds(const ServerWord& word);

} // namespace ratelimit::core

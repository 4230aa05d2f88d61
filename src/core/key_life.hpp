#pragma once

#include "core/decide.hpp"

#include <optional>
#include <span>

namespace ratelimit::core {

// The whole life of one stored key, for the stores: what a call does to the key it finds
// (or to no key), and what the store must write back. Both stores call these functions
// (the Redis script mirrors them, phase for phase, in src/store/redis/lua/key_life.lua), so that
// a key lives the same life in either; a store only reads the key, calls one of them and
// writes what it says.

// One call's request on a key.
struct KeyCall {
  // The algorithm the call names: `chosen` by the caller (-a), or the default, which a key
  // in use replaces with its own.
  Algorithm algorithm = Algorithm::sliding_log;
  bool chosen = false;
  std::span<const Limit> limits;
  Request request;
};

// What a store writes after a call.
enum class KeyWrite {
  nothing, // the stored key, or the absence of one, stands as it was
  state,   // the key's state becomes KeyOutcome::state
  erase,   // the stored key was fresh and is forgotten; nothing of it is left
};

struct KeyOutcome {
  // The key is in use under this algorithm, and the call chose another: nothing was
  // decided and nothing is written.
  std::optional<Algorithm> conflict;
  Decision decision;
  KeyWrite write = KeyWrite::nothing;
  // With KeyWrite::state: the state to store, and when it is a fresh key's again (its
  // clock plus core::inspect's reset_after), when gc may collect it or Redis expire it.
  KeyState state;
  Nanos fresh_at = 0;
  // With KeyWrite::state: the stored key takes `state.algorithm` (it held only a pause, or
  // its fresh state of another algorithm was forgotten); a store that keeps the algorithm
  // apart writes it too. False for a key that was not stored.
  bool takes_algorithm = false;
  // The stored key was forgotten (phase 1 below): with KeyWrite::state, nothing it held
  // stays but what `state` holds, its pause included (`state.paused_until`, 0 for none); a
  // store that keeps the pause apart writes it too.
  bool forgot = false;
};

// Decides `call` on a key whose stored state is `stored` (none: no key) and whose grant
// log is `log`, at `call.request.now`, in four phases:
//  1. forget_if_fresh: a key that holds nothing (fresh but for what a server said: a
//     pause, a server budget, grants awaiting their answers) and does not hold
//     the call's limits and algorithm is forgotten, as gc would forget it and Redis lets it
//     expire, so that no decision depends on when that happened: its log is cleared and
//     only what a server said stays (a key that holds only that);
//  2. settle_algorithm: a key in use keeps its own algorithm (a conflict when the call
//     chose another); a key that holds only a pause, or none, takes the call's;
//  3. decide (core::decide);
//  4. what to write: a grant is written; a denial only when it changed the key's limits
//     (to the call's), and not when they carried a debt past the bounds (bounds.hpp); a
//     key forgotten in phase 1 and not written again is erased.
KeyOutcome decide_key(std::optional<KeyState> stored, const KeyCall& call, GrantLog& log);

// Gives back `grant`, decided under `algorithm` and `limits`, to the key stored as
// `stored`, at `now` (core::give_back). A key reset since, or of another algorithm now, or
// holding only a pause, has nothing to give back to: nothing is written; nor is a state
// whose limits, carried to those of the grant, reach past the bounds.
KeyOutcome give_back_to_key(std::optional<KeyState> stored, Algorithm algorithm,
                            std::span<const Limit> limits, const Grant& grant, Nanos now,
                            GrantLog& log);

// Pauses the key stored as `stored` for `duration` from `now` (core::pause). A key that
// does not exist is made, holding only the pause, unless the pause ends before it begins
// (a pause of 0): then nothing is written. `decision.now` is the key's clock and
// `decision.paused_until` the end of its pause.
KeyOutcome pause_key(std::optional<KeyState> stored, Nanos now, Nanos duration, GrantLog& log);

// Applies what a server answered for the key stored as `stored` at `now` (core::observe):
// the pause it asks for, its quota standings as the server budget, the grant it answers, its
// policies. A key that does not exist is made, holding only what the answer leaves to hold
// (a pause, a budget), unless it leaves nothing (a policy alone, a pause of 0): then nothing
// is written. `decision` is the key's standing after it (core::inspect).
KeyOutcome observe_key(std::optional<KeyState> stored, Nanos now, const Observation& observation,
                       GrantLog& log);

} // namespace ratelimit::core

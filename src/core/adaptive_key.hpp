#pragma once

// What --adaptive does to a key's decisions: its learned rate (ServerWord::adaptive, the law
// in core/adaptive_rate.hpp) spaces the grants of its --adaptive calls, under the rates of
// their limits as ceilings; its answers teach it. core::decide, give_back and observe call
// these; the Redis script mirrors them in adaptive_rate.lua.

#include "core/decide.hpp"

#include <span>

namespace ratelimit::core {

// The ceiling of the key's learned rate under the limits of its last call (`limits`, not
// empty).
Rate adaptive_ceiling(std::span<const LimitState> limits);

// For an --adaptive request whose slot is at least `at`: the slot no earlier than the
// spacing allows. The rate is made on the key's first such call; `decision` gets the rate
// and, when the spacing moved the slot, until when (Decision::spaced_until).
Nanos spaced_slot(ServerWord& word, std::span<const Limit> limits, Nanos at, Decision& decision);

// After granting `grant` to an --adaptive request at `now`: the next grant's slot is spaced
// from it at the rate now (Grant::paced records how far).
void space_after(AdaptiveState& adaptive, std::span<const Limit> limits, Nanos now, Grant& grant);

// When `grant` is given back at `clock` before its slot, the spacing it took goes back too.
void return_spacing(ServerWord& word, const Grant& grant, Nanos clock);

// What an answer observed at `now` teaches a key whose last call named `limits`: a throttle
// or a success, for a key that learns a rate and holds limits.
void learn_from_answer(ServerWord& word, std::span<const LimitState> limits,
                       const Observation& observation, Nanos now);

} // namespace ratelimit::core

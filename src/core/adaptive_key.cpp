#include "core/adaptive_key.hpp"

#include "core/bounds.hpp"

#include <algorithm>
#include <vector>

namespace ratelimit::core {

Rate adaptive_ceiling(std::span<const LimitState> limits) {
  std::vector<Limit> named;
  for (const LimitState& limit_state : limits) {
    named.push_back(limit_state.limit);
  }
  return adaptive_ceiling(named);
}

Nanos spaced_slot(ServerWord& word, std::span<const Limit> limits, Nanos at, Decision& decision) {
  AdaptiveState& adaptive = word.adaptive ? *word.adaptive : word.adaptive.emplace();
  decision.adaptive_rate = effective_micro_rate(adaptive, adaptive_ceiling(limits), decision.now);
  if (adaptive.next_slot > at) {
    decision.spaced_until = adaptive.next_slot;
    return adaptive.next_slot;
  }
  return at;
}

void space_after(AdaptiveState& adaptive, std::span<const Limit> limits, Nanos now, Grant& grant) {
  grant.paced = adaptive_interval(adaptive, adaptive_ceiling(limits), now, grant.cost);
  adaptive.next_slot = grant.paced >= k_max_time - grant.at ? k_max_time : grant.at + grant.paced;
}

void return_spacing(ServerWord& word, const Grant& grant, Nanos clock) {
  // So that waiters who give their slots back (a pause, a probe) and reserve again find
  // them, not a schedule stretched by slots nobody will use. The slots reserved after it
  // stay: the next grant may share the last one's time, never more than one grant in excess
  // of the rate. A slot that has passed was spent.
  if (grant.paced > 0 && grant.at >= clock && word.adaptive) {
    word.adaptive->next_slot = std::max(clock, word.adaptive->next_slot - grant.paced);
  }
}

void learn_from_answer(ServerWord& word, std::span<const LimitState> limits,
                       const Observation& observation, Nanos now) {
  if (!word.adaptive || limits.empty() || !(observation.throttled || observation.answered)) {
    return;
  }
  *word.adaptive =
      adapt(*word.adaptive, adaptive_ceiling(limits),
            observation.throttled ? AdaptiveEvent::throttled : AdaptiveEvent::succeeded, now);
}

} // namespace ratelimit::core

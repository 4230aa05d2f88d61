#include "core/server_budget.hpp"

#include "core/bounds.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace ratelimit::core {

namespace {

std::int64_t clamp_ceiling(Wide value) {
  return static_cast<std::int64_t>(
      std::clamp<Wide>(value, -Wide{k_max_ceiling}, Wide{k_max_ceiling}));
}

bool ended(const AwaitedAnswer& awaited, Nanos now) {
  return awaited.until <= now;
}

// The cost of the grants still on their way that a ceiling ending at `reset` counts: those
// awaiting an answer whose slots are before it, and, with `up_to`, only those granted up to
// that sequence.
Wide awaited_before(const ServerWord& word, Nanos reset,
                    std::int64_t up_to = std::numeric_limits<std::int64_t>::max()) {
  Wide cost = 0;
  for (const AwaitedAnswer& awaited : word.awaited) {
    if (awaited.at < reset && awaited.seq <= up_to) {
      cost += awaited.cost;
    }
  }
  return cost;
}

// Adds the ceiling `entry`, drops those it makes redundant (or that make it so), and keeps
// at most k_max_budget_entries: those whose resets are nearest merge into one as tight as
// both. A ceiling is redundant when another ends no earlier and is no higher.
void add_ceiling(std::vector<BudgetEntry>& budget, BudgetEntry entry) {
  for (const BudgetEntry& other : budget) {
    if (other.reset >= entry.reset && other.ceiling <= entry.ceiling) {
      return;
    }
  }
  std::erase_if(budget, [&](const BudgetEntry& other) {
    return entry.reset >= other.reset && entry.ceiling <= other.ceiling;
  });
  budget.insert(std::upper_bound(
                    budget.begin(), budget.end(), entry,
                    [](const BudgetEntry& a, const BudgetEntry& b) { return a.reset < b.reset; }),
                entry);
  // Now the ceilings rise with their resets: merging two neighbours keeps the lower ceiling
  // until the later reset.
  while (budget.size() > k_max_budget_entries) {
    std::size_t nearest = 0;
    for (std::size_t i = 1; i + 1 < budget.size(); ++i) {
      if (budget[i + 1].reset - budget[i].reset <
          budget[nearest + 1].reset - budget[nearest].reset) {
        nearest = i;
      }
    }
    budget[nearest + 1].ceiling = std::min(budget[nearest].ceiling, budget[nearest + 1].ceiling);
    budget.erase(budget.begin() + static_cast<std::ptrdiff_t>(nearest));
  }
}

// Moves the key's numbers down by its grant sequence, which changes no budget: every
// ceiling and awaited grant is relative to it.
void rebase(ServerWord& word) {
  std::int64_t base = word.grant_seq;
  for (BudgetEntry& entry : word.budget) {
    entry.ceiling = clamp_ceiling(Wide{entry.ceiling} - base);
  }
  for (AwaitedAnswer& awaited : word.awaited) {
    awaited.seq = clamp_ceiling(Wide{awaited.seq} - base);
  }
  word.grant_seq = 0;
}

} // namespace

namespace {

// When the budget of `word` is stale at `open` (its latest answer older than
// 1/k_stale_fraction of the time to its last reset), the time until which a grant waits for
// the answer of the first probe on its way that `goes_before` it: the probe's slot plus the
// probe wait, at most the budget's last reset. Nothing when the budget is fresh, or no such
// probe is on its way.
template <class GoesBefore>
std::optional<Nanos> held_behind_probe(const ServerWord& word, Nanos open, GoesBefore goes_before) {
  Nanos running_until = 0;
  for (const BudgetEntry& entry : word.budget) {
    running_until = std::max(running_until, entry.reset);
  }
  Nanos span = running_until - word.answered_at;
  if (running_until <= open || word.answered_at == 0 || word.answered_at > open ||
      open - word.answered_at < span / k_stale_fraction) {
    return std::nullopt;
  }
  Nanos stale_from = word.answered_at + span / k_stale_fraction;
  std::optional<Nanos> probe;
  for (const AwaitedAnswer& awaited : word.awaited) {
    if (awaited.at >= stale_from && awaited.until > open && goes_before(awaited)) {
      probe = std::min(probe.value_or(awaited.at), awaited.at);
    }
  }
  if (!probe) {
    return std::nullopt;
  }
  Nanos wait =
      std::max(span / k_probe_wait_fraction, word.answer_latency + word.answer_latency / 2);
  Nanos held = *probe >= k_max_time - wait ? k_max_time : *probe + wait;
  return std::min(held, running_until);
}

} // namespace

Nanos budget_open(const ServerWord& word, Nanos from, std::int64_t cost) {
  Nanos open = from;
  // In the order of their resets: passing one ceiling's reset may meet the next.
  for (const BudgetEntry& entry : word.budget) {
    if (entry.reset > open && Wide{entry.ceiling} - word.grant_seq < cost) {
      open = entry.reset;
    }
  }
  // A stale budget: after the answer of a probe on its way (the grants held behind it go
  // together once it has come); without one, this grant is the probe.
  std::optional<Nanos> held = held_behind_probe(
      word, open, [&](const AwaitedAnswer& awaited) { return awaited.at <= open; });
  return held ? std::max(*held, open) : open;
}

Nanos probe_held_until(const ServerWord& word, Nanos now, std::int64_t seq, Nanos at) {
  std::optional<Nanos> held = held_behind_probe(word, now, [&](const AwaitedAnswer& awaited) {
    return awaited.seq != seq && (awaited.at < at || (awaited.at == at && awaited.seq < seq));
  });
  return held && *held > now ? *held : 0;
}

std::int64_t count_grant(ServerWord& word, Nanos now, Nanos at, std::int64_t cost,
                         Nanos answer_wait) {
  // A grant above any budget's ceiling is refused by it anyway; without one, its cost only
  // orders grants.
  std::int64_t counted = std::min(cost, k_max_grant_seq);
  if (word.grant_seq > k_max_grant_seq - counted) {
    rebase(word);
  }
  word.grant_seq += counted;
  // A ceiling that ends before the slot does not count the grant.
  for (BudgetEntry& entry : word.budget) {
    if (entry.reset <= at) {
      entry.ceiling = clamp_ceiling(Wide{entry.ceiling} + counted);
    }
  }
  if (answer_wait > 0) {
    std::erase_if(word.awaited, [&](const AwaitedAnswer& awaited) { return ended(awaited, now); });
    if (word.awaited.size() >= k_max_awaited_answers) {
      word.awaited.erase(word.awaited.begin());
    }
    Nanos until = answer_wait >= k_max_time - at ? k_max_time : at + answer_wait;
    word.awaited.push_back({word.grant_seq, counted, at, until});
  }
  return word.grant_seq;
}

void return_grant(ServerWord& word, std::int64_t seq, std::int64_t cost, Nanos at) {
  auto found = std::find_if(word.awaited.begin(), word.awaited.end(),
                            [&](const AwaitedAnswer& awaited) { return awaited.seq == seq; });
  // A grant that awaited no answer may not have been counted by a ceiling made after it:
  // nothing is raised for it.
  if (found == word.awaited.end() || found->cost != std::min(cost, k_max_grant_seq)) {
    return;
  }
  word.awaited.erase(found);
  for (BudgetEntry& entry : word.budget) {
    if (entry.reset > at) {
      entry.ceiling = clamp_ceiling(Wide{entry.ceiling} + std::min(cost, k_max_grant_seq));
    }
  }
}

void observe_server(ServerWord& word, Nanos now, const Observation& observation) {
  forget_ended(word, now);
  bool tracked = false;
  std::int64_t answered = word.grant_seq;
  if (observation.grant) {
    // A sequence the key has not reached comes from before a reset of the key: unknown.
    answered = std::min(*observation.grant, word.grant_seq);
    auto found = std::find_if(word.awaited.begin(), word.awaited.end(),
                              [&](const AwaitedAnswer& a) { return a.seq == *observation.grant; });
    if (found != word.awaited.end()) {
      // Within the wait its caller gave: the time since its slot, at most that.
      word.answer_latency = std::clamp<Nanos>(now - found->at, 0, found->until - found->at);
      word.awaited.erase(found);
      tracked = true;
    }
  }
  for (const SaidStanding& standing : observation.standings) {
    if (standing.reset_after <= 0) {
      continue;
    }
    Nanos reset =
        standing.reset_after >= k_max_time - now ? k_max_time : now + standing.reset_after;
    // From here on, every grant counts against it; before, whatever may still be on its way.
    Wide ceiling = Wide{standing.remaining} + word.grant_seq - awaited_before(word, reset);
    if (observation.grant && !tracked) {
      // A request that reported no grant of its own (observe --grant): also every grant made
      // since it, which may have reached the server after it.
      ceiling = std::min(ceiling, Wide{standing.remaining} + answered -
                                      awaited_before(word, reset, answered));
    }
    add_ceiling(word.budget, {clamp_ceiling(ceiling), reset});
    word.answered_at = now;
  }
  if (!observation.policies.empty()) {
    word.policies.clear();
    for (const LearnedPolicy& policy : observation.policies) {
      if (word.policies.size() == k_max_policies) {
        break;
      }
      LearnedPolicy kept = policy;
      kept.field.resize(std::min(kept.field.size(), k_max_policy_text));
      kept.name.resize(std::min(kept.name.size(), k_max_policy_text));
      word.policies.push_back(std::move(kept));
    }
  }
}

std::optional<BudgetStanding> budget_standing(const ServerWord& word, Nanos now) {
  std::optional<BudgetStanding> standing;
  for (const BudgetEntry& entry : word.budget) {
    if (entry.reset <= now) {
      continue;
    }
    std::int64_t left = std::max<Wide>(0, Wide{entry.ceiling} - word.grant_seq);
    if (!standing || left < standing->remaining) {
      standing = BudgetStanding{left, entry.reset};
    }
  }
  return standing;
}

Nanos overdrawn_until(const ServerWord& word, Nanos now) {
  Nanos until = 0;
  for (const BudgetEntry& entry : word.budget) {
    if (entry.reset > now && entry.ceiling < word.grant_seq) {
      until = std::max(until, entry.reset);
    }
  }
  return until;
}

Nanos server_word_until(const ServerWord& word, Nanos now) {
  Nanos until = now;
  for (const BudgetEntry& entry : word.budget) {
    until = std::max(until, entry.reset);
  }
  for (const AwaitedAnswer& awaited : word.awaited) {
    until = std::max(until, awaited.until);
  }
  if (word.adaptive) {
    until = std::max(until, adaptive_until(*word.adaptive));
  }
  return until;
}

void forget_ended(ServerWord& word, Nanos now) {
  std::erase_if(word.budget, [&](const BudgetEntry& entry) { return entry.reset <= now; });
  std::erase_if(word.awaited, [&](const AwaitedAnswer& awaited) { return ended(awaited, now); });
}

bool within_bounds(const ServerWord& word) {
  auto time = [](Nanos t) { return t >= k_min_time && t <= k_max_time; };
  auto ceiling = [](std::int64_t c) { return c >= -k_max_ceiling && c <= k_max_ceiling; };
  if (word.grant_seq < 0 || word.grant_seq > k_max_grant_seq || !time(word.answered_at) ||
      word.answer_latency < 0 || word.answer_latency > k_max_time ||
      word.budget.size() > k_max_budget_entries || word.awaited.size() > k_max_awaited_answers ||
      word.policies.size() > k_max_policies) {
    return false;
  }
  for (std::size_t i = 0; i < word.budget.size(); ++i) {
    if (!ceiling(word.budget[i].ceiling) || !time(word.budget[i].reset) ||
        (i > 0 && word.budget[i].reset < word.budget[i - 1].reset)) {
      return false;
    }
  }
  for (const AwaitedAnswer& awaited : word.awaited) {
    if (!ceiling(awaited.seq) || awaited.cost < 0 || awaited.cost > k_max_grant_seq ||
        !time(awaited.at) || !time(awaited.until)) {
      return false;
    }
  }
  for (const LearnedPolicy& policy : word.policies) {
    if (policy.quota < 0 || policy.window < 0 || policy.field.size() > k_max_policy_text ||
        policy.name.size() > k_max_policy_text) {
      return false;
    }
  }
  if (const auto& adaptive = word.adaptive) {
    if (adaptive->max_rate < 0 || adaptive->max_rate > k_max_adaptive_rate ||
        adaptive->successes < 0 || adaptive->successes > k_max_successes ||
        !time(adaptive->cut_at) || !time(adaptive->measured_from) || !time(adaptive->clock) ||
        !time(adaptive->next_slot)) {
      return false;
    }
  }
  return true;
}

} // namespace ratelimit::core

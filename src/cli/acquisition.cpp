#include "cli/acquisition.hpp"

#include "store/store.hpp"

#include <algorithm>

namespace ratelimit::cli {

Acquisition acquire_slot(Gate& gate, Sleeper& sleeper, const SlotAsk& ask,
                         const ReserveMore& reserve_more) {
  constexpr core::Nanos k_forever = std::numeric_limits<core::Nanos>::max();
  core::Nanos started = sleeper.now();
  core::Request request;
  request.cost = ask.cost;
  request.reserve = ask.reserve;
  request.answer_wait = ask.awaits_answer ? core::k_answer_wait : 0;
  Acquisition acquired;
  std::optional<core::Nanos> first_sleep;
  for (;;) {
    request.max_wait = ask.max_wait == k_forever
                           ? k_forever
                           : std::max<core::Nanos>(0, ask.max_wait - (sleeper.now() - started));
    acquired.decision = gate.decide(request);
    acquired.more.reset();
    const core::Decision& decision = acquired.decision;
    bool sleeps_then_asks =
        !decision.allowed && ask.ask_again_after_refusal && decision.wait <= request.max_wait;
    if ((decision.allowed && decision.wait == 0) || (!decision.allowed && !sleeps_then_asks)) {
      break;
    }
    if (decision.allowed && reserve_more) {
      acquired.more = reserve_more(decision.wait, request.max_wait);
    }
    core::Nanos wait = std::max(decision.wait, acquired.more ? acquired.more->wait : 0);
    if (decision.allowed) {
      // Later than the slot never grants more than the slot did.
      wait += ask.jitter;
    }
    // Latest first, so that each leaves the key as it was before it.
    auto give_back = [&] {
      if (acquired.more) {
        gate.give_back(acquired.more->grant);
        acquired.more.reset();
      }
      if (decision.allowed) {
        gate.give_back(decision.grant);
      }
    };
    if (wait >= store::k_long_sleep) {
      gate.close_while_sleeping(); // the slot is taken: nothing holds it but the store
    }
    if (!first_sleep) {
      first_sleep = sleeper.now();
    }
    acquired.interrupted = sleeper.sleep(wait);
    if (acquired.interrupted != 0) {
      give_back();
      break;
    }
    if (!decision.allowed) {
      continue; // the queue takes requests again
    }
    bool paused = false;
    try {
      paused = gate.paused(decision.grant);
    } catch (const store::StoreError& error) {
      acquired.pause_unchecked = error.what();
    }
    if (!paused) {
      break;
    }
    give_back();
  }
  acquired.waited = first_sleep ? sleeper.now() - *first_sleep : 0;
  return acquired;
}

RunSlotWait wait_for_run_slot(RunSlotQueue& queue, Sleeper& clock, core::Nanos max_wait,
                              bool no_wait) {
  constexpr core::Nanos k_forever = std::numeric_limits<core::Nanos>::max();
  core::Nanos began = clock.now();
  RunSlotWait result;
  result.answer = queue.attempt();
  while (!result.answer.started) {
    const store::StartAnswer& answer = result.answer;
    core::Nanos left = max_wait == k_forever ? k_forever : max_wait - (clock.now() - began);
    // When the start is allowed, if anyone knows: a release, or the end of a pause.
    std::optional<core::Nanos> retry_after;
    if (!answer.behind && answer.admission.admission == core::Admission::at) {
      retry_after = answer.admission.at - answer.now;
    }
    if (!no_wait && (left <= 0 || (retry_after && *retry_after > left))) {
      result.timed_out = true;
    }
    if (no_wait || result.timed_out) {
      return result;
    }
    result.interrupted = queue.wait_for_change(retry_after ? *retry_after : left);
    if (result.interrupted != 0) {
      return result;
    }
    result.slept = true;
    result.answer = queue.attempt();
  }
  result.started = true;
  result.waited = clock.now() - began;
  return result;
}

} // namespace ratelimit::cli

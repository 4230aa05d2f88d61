#include "core/answer_pause.hpp"

#include "core/backoff.hpp"

#include <algorithm>

namespace ratelimit::core {

namespace {

bool honours_retry_after(const std::optional<int>& status) {
  return !status || *status == 413 || *status == 429 || *status == 503;
}

bool throttled(const std::optional<int>& status) {
  return status && (*status == 429 || *status == 503);
}

} // namespace

bool is_throttled(const ServerAnswer& answer) {
  return throttled(answer.status);
}

AnswerPause answer_pause(const ServerAnswer& answer, Nanos now, Nanos max_pause, double jitter,
                         Nanos backoff, int attempt) {
  AnswerPause pause;
  if (answer.retry_at && honours_retry_after(answer.status)) {
    if (*answer.retry_at <= now) {
      return pause; // the time it named has come
    }
    pause.cause = PauseCause::retry_after;
    pause.asked = *answer.retry_at - now;
  } else if (throttled(answer.status)) {
    pause.cause = PauseCause::throttled;
    Nanos base = std::min(backoff, max_pause);
    pause.asked = backoff_delay(base, std::max(base, max_pause), attempt, jitter);
  } else {
    return pause;
  }
  pause.capped = pause.asked > max_pause;
  pause.duration = std::min(pause.asked, max_pause);
  return pause;
}

} // namespace ratelimit::core

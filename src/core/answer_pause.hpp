#pragma once

#include "core/server_answer.hpp"
#include "core/time.hpp"

namespace ratelimit::core {

// Why an answer pauses its key.
enum class PauseCause {
  none,        // it asked for no wait
  retry_after, // Retry-After (on 413, 429, 503, or with no status known)
  throttled,   // 429 or 503 without Retry-After: the backoff's first pause
};

// The pause an answer asks of its key, from `now`.
struct AnswerPause {
  PauseCause cause = PauseCause::none;
  Nanos duration = 0; // at most the cap
  Nanos asked = 0;    // what the answer asked for, before the cap
  bool capped = false;
};

// The first backoff pause after a 429 or 503 without Retry-After, as `run --backoff` starts.
inline constexpr Nanos k_throttled_pause = k_nanos_per_second;

// The pause `answer` asks of its key from `now` (our clock), at most `max_pause` (> 0):
// until its Retry-After time when the status is one that RFC 9110 and clients such as
// urllib3 honour it with (413, 429, 503) or no status is known; else, on 429 or 503, a
// backoff pause (core::backoff_delay from `backoff`, the `attempt`th of a command retried,
// lengthened by `jitter` in [0, 1)); else none. The cap is the user's guard against an
// answer that would stop the key for hours (a misconfigured server, a hostile
// intermediary).
AnswerPause answer_pause(const ServerAnswer& answer, Nanos now, Nanos max_pause, double jitter,
                         Nanos backoff = k_throttled_pause, int attempt = 0);

// Whether `answer` says the server is overloaded: 429 or 503.
bool is_throttled(const ServerAnswer& answer);

} // namespace ratelimit::core

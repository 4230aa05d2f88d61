#include "core/answer_pause.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::core;

namespace {

constexpr Nanos k_s = k_nanos_per_second;
constexpr Nanos k_now = 1'700'000'000 * k_s;

ServerAnswer answer_with(std::optional<int> status, std::optional<Nanos> retry_at) {
  ServerAnswer answer;
  answer.status = status;
  answer.retry_at = retry_at;
  return answer;
}

} // namespace

TEST_CASE("core::answer_pause waits until Retry-After on 429, 503 and 413, capped") {
  for (int status : {413, 429, 503}) {
    AnswerPause pause = answer_pause(answer_with(status, k_now + 30 * k_s), k_now, 300 * k_s, 0);
    CHECK(pause.cause == PauseCause::retry_after);
    CHECK(pause.duration == 30 * k_s);
    CHECK_FALSE(pause.capped);
  }
  AnswerPause capped = answer_pause(answer_with(429, k_now + 3600 * k_s), k_now, 300 * k_s, 0);
  CHECK(capped.duration == 300 * k_s);
  CHECK(capped.asked == 3600 * k_s);
  CHECK(capped.capped);
  // No status known (--retry-after alone): the server asked, so it holds.
  CHECK(answer_pause(answer_with(std::nullopt, k_now + 5 * k_s), k_now, 300 * k_s, 0).duration ==
        5 * k_s);
  // Counted from now: an answer read late waits only what is left of it.
  CHECK(answer_pause(answer_with(429, k_now + 5 * k_s), k_now + 2 * k_s, 300 * k_s, 0).duration ==
        3 * k_s);
}

TEST_CASE("core::answer_pause backs off on 429 and 503 without Retry-After, or one past") {
  AnswerPause pause = answer_pause(answer_with(429, std::nullopt), k_now, 300 * k_s, 0.5);
  CHECK(pause.cause == PauseCause::throttled);
  CHECK(pause.duration == 1250 * k_nanos_per_milli);
  CHECK(answer_pause(answer_with(503, std::nullopt), k_now, 300 * k_s, 0).duration == k_s);
  // A Retry-After whose time has come: no wait.
  CHECK(answer_pause(answer_with(429, k_now), k_now, 300 * k_s, 0).cause == PauseCause::none);
  // A cap below the backoff's base.
  AnswerPause short_cap = answer_pause(answer_with(503, std::nullopt), k_now, 200'000'000, 0.9);
  CHECK(short_cap.duration == 200'000'000);
}

TEST_CASE("core::answer_pause leaves other answers alone, Retry-After on a 200 too") {
  for (int status : {200, 204, 301, 404, 500}) {
    CHECK(answer_pause(answer_with(status, k_now + 30 * k_s), k_now, 300 * k_s, 0).cause ==
          PauseCause::none);
  }
  CHECK(answer_pause(answer_with(std::nullopt, std::nullopt), k_now, 300 * k_s, 0).cause ==
        PauseCause::none);
}

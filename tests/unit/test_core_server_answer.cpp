#include "core/server_answer.hpp"

#include "core/rate.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace ratelimit::core;

namespace {

constexpr Nanos k_s = k_nanos_per_second;
// When the answers below arrive: 2023-11-14T22:13:20Z, a whole second.
constexpr Nanos k_arrived = 1'700'000'000 * k_s;

ServerAnswer understand(const std::string& head) {
  AnswerInput input;
  input.head = head;
  input.arrived = k_arrived;
  Result<ServerAnswer> answer = understand_answer(input);
  REQUIRE_MESSAGE(answer.ok(), answer.error());
  return answer.value();
}

// Whether a note on `field` contains `text`.
bool noted(const ServerAnswer& answer, std::string_view field, std::string_view text) {
  for (const FieldNote& note : answer.notes) {
    if (note.field == field && note.note.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("core::understand_answer reads GitHub's fields: the reset in epoch seconds") {
  ServerAnswer answer = understand("HTTP/2 200 \r\n"
                                   "x-ratelimit-limit: 5000\r\n"
                                   "x-ratelimit-remaining: 4999\r\n"
                                   "x-ratelimit-reset: 1700003600\r\n"
                                   "x-ratelimit-used: 1\r\n"
                                   "x-ratelimit-resource: core\r\n\r\n");
  CHECK(answer.status == 200);
  CHECK_FALSE(answer.retry_at);
  REQUIRE(answer.standings.size() == 1);
  CHECK(answer.standings[0].field == "x-ratelimit-remaining");
  CHECK(answer.standings[0].remaining == 4999);
  CHECK(answer.standings[0].reset == 1'700'003'600 * k_s);
  REQUIRE(answer.policies.size() == 1);
  CHECK(answer.policies[0].quota == 5000);
  CHECK_FALSE(answer.policies[0].window);
  CHECK(noted(answer, "x-ratelimit-reset", "epoch seconds"));
}

TEST_CASE("core::understand_answer reads a reset by its value: delta, epoch s, epoch ms") {
  auto reset_of = [](const std::string& value) {
    ServerAnswer answer = understand("HTTP/1.1 200 OK\r\nX-RateLimit-Remaining: 3\r\n"
                                     "X-RateLimit-Reset: " +
                                     value + "\r\n\r\n");
    return answer.standings.empty() ? std::optional<Nanos>{} : answer.standings[0].reset;
  };
  CHECK(reset_of("30") == k_arrived + 30 * k_s);
  CHECK(reset_of("1.5") == k_arrived + 1500 * k_nanos_per_milli);
  // Below 10^9 but beyond the longest duration: held there.
  CHECK(reset_of("999999999") == k_arrived + k_max_duration);
  CHECK(reset_of("1700000030") == k_arrived + 30 * k_s);
  CHECK(reset_of("1700000030.25") == k_arrived + 30250 * k_nanos_per_milli);
  CHECK(reset_of("1700000030000") == k_arrived + 30 * k_s);
  // A reset that has come says nothing of the future: the standing goes.
  CHECK_FALSE(reset_of("1699999990"));
  CHECK_FALSE(reset_of("0"));
  // One that cannot be read leaves the standing without an end.
  ServerAnswer bad = understand("HTTP/1.1 200 OK\r\nX-RateLimit-Remaining: 3\r\n"
                                "X-RateLimit-Reset: soon\r\n\r\n");
  REQUIRE(bad.standings.size() == 1);
  CHECK_FALSE(bad.standings[0].reset);
  CHECK(noted(bad, "x-ratelimit-reset", "not a number"));
}

TEST_CASE("core::understand_answer reads the IETF fields, several policies, strings or tokens") {
  ServerAnswer answer =
      understand("HTTP/1.1 200 OK\r\n"
                 "RateLimit-Policy: \"burst\";q=100;w=60,\"daily\";q=1000;w=86400\r\n"
                 "RateLimit-Policy: bytes;q=65535;qu=\"content-bytes\";w=10;pk=:cHsdsRa894==:\r\n"
                 "RateLimit: \"burst\";r=50;t=30, daily;r=999\r\n"
                 "RateLimit: \"bytes\";r=1;t=5\r\n\r\n");
  REQUIRE(answer.policies.size() == 2);
  CHECK(answer.policies[0].policy == "burst");
  CHECK(answer.policies[0].quota == 100);
  CHECK(answer.policies[0].window == 60 * k_s);
  CHECK(answer.policies[1].policy == "daily");
  CHECK(answer.policies[1].window == 86400 * k_s);
  REQUIRE(answer.standings.size() == 2);
  CHECK(answer.standings[0].policy == "burst");
  CHECK(answer.standings[0].remaining == 50);
  CHECK(answer.standings[0].reset == k_arrived + 30 * k_s);
  // Without t, the policy's window bounds the reset.
  CHECK(answer.standings[1].policy == "daily");
  CHECK(answer.standings[1].reset == k_arrived + 86400 * k_s);
  CHECK(noted(answer, "ratelimit", "its window counts"));
  CHECK(noted(answer, "ratelimit-policy", "other units than requests"));
  CHECK(noted(answer, "ratelimit", "other units than requests"));
}

TEST_CASE("core::understand_answer reads draft-07's dictionary and the older separate fields") {
  ServerAnswer draft07 = understand("HTTP/1.1 200 OK\r\nRateLimit-Policy: 100;w=10\r\n"
                                    "RateLimit: limit=100, remaining=50, reset=5\r\n\r\n");
  REQUIRE(draft07.standings.size() == 1);
  CHECK(draft07.standings[0].remaining == 50);
  CHECK(draft07.standings[0].reset == k_arrived + 5 * k_s);
  REQUIRE(draft07.policies.size() == 2);
  CHECK(draft07.policies[0].quota == 100);
  CHECK(draft07.policies[0].window == 10 * k_s);

  ServerAnswer older = understand("HTTP/1.1 200 OK\r\nRateLimit-Limit: 10, 10;w=1, 50;w=60\r\n"
                                  "RateLimit-Remaining: 4\r\nRateLimit-Reset: 7\r\n\r\n");
  REQUIRE(older.standings.size() == 1);
  CHECK(older.standings[0].field == "ratelimit-remaining");
  CHECK(older.standings[0].remaining == 4);
  CHECK(older.standings[0].reset == k_arrived + 7 * k_s);
  REQUIRE(older.policies.size() == 3);
  CHECK(older.policies[2].quota == 50);
  CHECK(older.policies[2].window == 60 * k_s);
}

TEST_CASE("core::understand_answer reads Retry-After as delay-seconds or an HTTP-date") {
  auto retry_of = [](const std::string& fields) {
    return understand("HTTP/1.1 429 Too Many Requests\r\n" + fields + "\r\n").retry_at;
  };
  CHECK(retry_of("Retry-After: 120\r\n") == k_arrived + 120 * k_s);
  CHECK(retry_of("retry-after:\t 2.5 \r\n") == k_arrived + 2500 * k_nanos_per_milli);
  CHECK(retry_of("Retry-After: Tue, 14 Nov 2023 22:14:20 GMT\r\n") == k_arrived + 60 * k_s);
  CHECK(retry_of("Retry-After-Ms: 1500\r\n") == k_arrived + 1500 * k_nanos_per_milli);
  // A time that has come, a zero, a bad value: no wait.
  CHECK_FALSE(retry_of("Retry-After: Tue, 14 Nov 2023 22:13:00 GMT\r\n"));
  CHECK_FALSE(retry_of("Retry-After: 0\r\n"));
  CHECK_FALSE(retry_of("Retry-After: -5\r\n"));
  CHECK_FALSE(retry_of("Retry-After: soon\r\n"));
  CHECK_FALSE(retry_of(""));
  // Repeated: the latest counts.
  ServerAnswer twice = understand(
      "HTTP/1.1 503 x\r\nRetry-After: 5\r\nRetry-After: 9\r\nRetry-After-Ms: 100\r\n\r\n");
  CHECK(twice.retry_at == k_arrived + 9 * k_s);
  CHECK(noted(twice, "retry-after", "latest"));
  // Huge: held at the longest duration, never overflowing.
  CHECK(retry_of("Retry-After: 99999999999999999999999\r\n") == k_arrived + k_max_duration);
}

TEST_CASE("core::understand_answer moves the server's epoch times by its Date's offset") {
  // The server's clock is an hour behind ours.
  ServerAnswer behind = understand("HTTP/1.1 429 x\r\nDate: Tue, 14 Nov 2023 21:13:20 GMT\r\n"
                                   "Retry-After: Tue, 14 Nov 2023 21:14:20 GMT\r\n"
                                   "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1699996430\r\n"
                                   "\r\n");
  CHECK(behind.server_offset == -3600 * k_s);
  CHECK(behind.retry_at == k_arrived + 60 * k_s);
  REQUIRE(behind.standings.size() == 1);
  CHECK(behind.standings[0].reset == k_arrived + 30 * k_s);
  CHECK(noted(behind, "date", "behind"));
  // Within the tolerance the clocks agree; delta-seconds never move.
  ServerAnswer close = understand("HTTP/1.1 429 x\r\nDate: Tue, 14 Nov 2023 22:13:19 GMT\r\n"
                                  "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1700000030\r\n"
                                  "RateLimit: \"p\";r=0;t=30\r\n\r\n");
  CHECK(close.server_offset == 0);
  REQUIRE(close.standings.size() == 2);
  CHECK(close.standings[0].reset == k_arrived + 30 * k_s);
  CHECK(close.standings[1].reset == k_arrived + 30 * k_s);
  ServerAnswer bad_date = understand("HTTP/1.1 200 x\r\nDate: yesterday\r\n\r\n");
  CHECK(noted(bad_date, "date", "not an HTTP-date"));
}

TEST_CASE("core::understand_answer takes the least remaining and latest reset of repeats") {
  ServerAnswer answer = understand("HTTP/1.1 200 OK\r\nX-RateLimit-Remaining: 7, 5\r\n"
                                   "x-ratelimit-remaining: 6\r\nX-RateLimit-Reset: 10\r\n"
                                   "X-RATELIMIT-RESET: 20\r\n\r\n");
  REQUIRE(answer.standings.size() == 1);
  CHECK(answer.standings[0].remaining == 5);
  CHECK(answer.standings[0].reset == k_arrived + 20 * k_s);
  CHECK(noted(answer, "x-ratelimit-remaining", "least"));
  CHECK(noted(answer, "x-ratelimit-reset", "latest"));
}

TEST_CASE("core::understand_answer ignores bad values, saying why, and never fails on them") {
  ServerAnswer answer =
      understand("HTTP/1.1 200 OK\r\n"
                 "X-RateLimit-Limit: lots\r\nX-RateLimit-Remaining: -1\r\nX-RateLimit-Reset: 60\r\n"
                 "RateLimit-Policy: \"p\";w=10, \"q\";q=5;w=0, 7;w=\"x\"\r\n"
                 "RateLimit: \"p\";t=5, 42;r=1, \"q\";r=1;t=1.5, \"s\";r=99999999999999\r\n"
                 "RateLimit-Remaining: 1e3\r\n"
                 "Junk line\r\n\r\n");
  CHECK(answer.standings.empty());
  REQUIRE(answer.policies.size() == 2); // q without its window, 7 without its window
  CHECK_FALSE(answer.policies[0].window);
  CHECK(noted(answer, "x-ratelimit-limit", "not a number"));
  CHECK(noted(answer, "x-ratelimit-remaining", "not a count"));
  CHECK(noted(answer, "x-ratelimit-reset", "nothing to reset"));
  CHECK(noted(answer, "ratelimit-policy", "no quota"));
  CHECK(noted(answer, "ratelimit-policy", "window"));
  CHECK(noted(answer, "ratelimit", "does not name its policy"));
  CHECK(noted(answer, "ratelimit", "not whole seconds"));
  CHECK(noted(answer, "ratelimit", "remaining count"));
  CHECK(noted(answer, "ratelimit-remaining", "not a number"));
  CHECK(noted(answer, "", "not a field"));
  ServerAnswer broken = understand("HTTP/1.1 200 OK\r\nRateLimit: \"p\";r=1;t=2,\r\n"
                                   "RateLimit-Policy: (\r\n\r\n");
  CHECK(broken.standings.empty());
  CHECK(noted(broken, "ratelimit", "not a structured-field list"));
  CHECK(noted(broken, "ratelimit-policy", "not a structured-field list"));
}

TEST_CASE("core::understand_answer: given values take the head's place; no head at all fails") {
  AnswerInput input;
  input.arrived = k_arrived;
  input.status = 503;
  input.retry_after = "30";
  Result<ServerAnswer> bare = understand_answer(input);
  REQUIRE(bare.ok());
  CHECK(bare->status == 503);
  CHECK(bare->retry_at == k_arrived + 30 * k_s);
  CHECK(bare->heads == 0);

  std::string head = "HTTP/1.1 200 OK\r\nRetry-After: 5\r\n\r\n";
  input.head = head;
  Result<ServerAnswer> given = understand_answer(input);
  REQUIRE(given.ok());
  CHECK(given->status == 503);
  CHECK(given->retry_at == k_arrived + 30 * k_s);
  CHECK(noted(*given, "", "the head's status"));
  CHECK(noted(*given, "retry-after", "the one given counts"));

  input.retry_after = "later";
  CHECK_FALSE(understand_answer(input).ok());
  input.retry_after.reset();
  for (std::string text : {"", "hello\n", "{\"status\": 429}", "Retry-After: 5\r\n\r\n"}) {
    input.head = text;
    Result<ServerAnswer> refused = understand_answer(input);
    CAPTURE(text);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().find("not an HTTP response head") != std::string::npos);
  }
}

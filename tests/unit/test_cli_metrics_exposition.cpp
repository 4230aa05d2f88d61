#include "cli/metrics_exposition.hpp"

#include <doctest/doctest.h>
#include <string>
#include <vector>

using namespace ratelimit;

namespace {

store::KeyStatus key_status(std::string key, std::int64_t remaining, core::Nanos now,
                            core::Nanos paused_until) {
  store::KeyStatus status;
  status.key = std::move(key);
  status.standing.remaining = remaining;
  status.standing.now = now;
  status.standing.paused_until = paused_until;
  return status;
}

store::RunEntry run_entry(std::string key, bool running) {
  store::RunEntry entry;
  entry.key = std::move(key);
  entry.running = running;
  return entry;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

constexpr core::Nanos k_now = 1'700'000'000 * core::k_nanos_per_second;

} // namespace

TEST_CASE("cli::metrics_exposition: the seconds left of a pause, 0 for a key not paused") {
  std::string text = cli::metrics_exposition(
      {},
      {key_status("api", 3, k_now, 0),
       key_status("held", 0, k_now, k_now + 90 * core::k_nanos_per_second / 4),
       key_status("ended", 5, k_now, k_now - core::k_nanos_per_second),
       key_status("tiny", 0, k_now, k_now + 1)},
      {});
  CHECK(has_line(text, "# TYPE ratelimit_paused_seconds gauge"));
  CHECK(text.find("# HELP ratelimit_paused_seconds ") != std::string::npos);
  CHECK(has_line(text, "ratelimit_paused_seconds{key=\"api\"} 0"));
  CHECK(has_line(text, "ratelimit_paused_seconds{key=\"held\"} 22.5"));
  CHECK(has_line(text, "ratelimit_paused_seconds{key=\"ended\"} 0"));
  // A pause that still runs never reads 0: rounded up to the microsecond.
  CHECK(has_line(text, "ratelimit_paused_seconds{key=\"tiny\"} 0.000001"));
  CHECK(has_line(text, "ratelimit_remaining{key=\"api\"} 3"));
}

TEST_CASE("cli::metrics_exposition: commands running on the run slots, by key, 0 for a key "
          "with none") {
  store::KeyStatus damaged;
  damaged.key = "broken";
  damaged.damage = "the state of key \"broken\" is damaged";
  std::string text = cli::metrics_exposition({}, {key_status("api", 3, k_now, 0), damaged},
                                             {run_entry("jobs", true), run_entry("jobs", true),
                                              run_entry("jobs", false), run_entry("queued", false),
                                              run_entry("broken", true)});
  CHECK(has_line(text, "# TYPE ratelimit_running gauge"));
  CHECK(text.find("# HELP ratelimit_running ") != std::string::npos);
  CHECK(has_line(text, "ratelimit_running{key=\"api\"} 0"));
  CHECK(has_line(text, "ratelimit_running{key=\"jobs\"} 2"));
  CHECK(has_line(text, "ratelimit_running{key=\"queued\"} 0"));
  // The run slots do not depend on the state: a damaged one hides nothing of them, while the
  // gauges of the state leave it out.
  CHECK(has_line(text, "ratelimit_running{key=\"broken\"} 1"));
  CHECK(text.find("ratelimit_remaining{key=\"broken\"}") == std::string::npos);
  CHECK(text.find("ratelimit_paused_seconds{key=\"broken\"}") == std::string::npos);
}

TEST_CASE("cli::metrics_exposition: an empty store has the families and no samples") {
  std::string text = cli::metrics_exposition({}, {}, {});
  for (const char* family :
       {"ratelimit_requests_total counter", "ratelimit_wait_seconds_total counter",
        "ratelimit_remaining gauge", "ratelimit_paused_seconds gauge", "ratelimit_running gauge"}) {
    CAPTURE(family);
    CHECK(text.find(std::string("# TYPE ") + family + "\n") != std::string::npos);
  }
  CHECK(text.find("{") == std::string::npos);
}

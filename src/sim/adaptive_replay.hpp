#pragma once

#include "core/rate.hpp"

#include <cstdint>
#include <vector>

namespace ratelimit::sim {

// A limit the simulated server keeps secret: from `from` (virtual time) on, it answers 429
// to what is over `rate`, counted in fixed windows of the rate's period from time 0.
struct ServerLimit {
  core::Rate rate;
  core::Nanos from = 0;
};

// Workers calling a server through one adaptive key, as `xargs -P WORKERS ratelimit run KEY
// -r CEILING --adaptive --observe -- curl ...` would: each worker reserves its slot at the
// key's effective rate, waits for it, makes its call, and the answer comes `latency` later
// (drawn in [latency/2, 3 latency/2)). A 429 carries `Retry-After` (the whole seconds to
// the end of the server's window, rounded up), which pauses the key from the answer on; the
// call is then retried, as often as it takes.
struct AdaptiveSpec {
  core::Rate ceiling;
  std::vector<ServerLimit> server; // by `from`, the first from 0
  std::int64_t workers = 8;
  std::int64_t calls = 300;
  core::Nanos latency = 100 * core::k_nanos_per_milli;
  std::uint64_t seed = 1;
};

// The key's effective rate at `at`, and what the server answered in the bucket before it.
struct AdaptiveSample {
  core::Nanos at = 0;
  std::int64_t micro_rate = 0; // micro-requests per second
  std::int64_t succeeded = 0;
  std::int64_t throttled = 0;
};

// When the rate first reached 70 % of a raised server limit, after the raise.
struct Convergence {
  ServerLimit limit;
  // From the raise; -1: never within the run.
  core::Nanos after = -1;
};

struct AdaptiveReplay {
  std::int64_t calls = 0;
  std::int64_t throttled = 0; // 429 answers
  std::int64_t cuts = 0;
  std::int64_t most_retries = 0; // the most 429s one call met
  core::Nanos duration = 0;      // from 0 to the last answer
  // The time the server's limits allow the calls, at the least.
  core::Nanos least_duration = 0;
  core::Nanos bucket_width = 0;
  std::vector<AdaptiveSample> samples; // at the end of each bucket
  std::vector<Convergence> raises;
};

// The share of a raised limit at which the rate counts as having followed it: 7/10.
inline constexpr std::int64_t k_converged_tenths = 7;

// Replays `spec` on a virtual clock through core::adapt. `spec` holds at least one worker,
// one call, and a server limit from 0.
AdaptiveReplay replay_adaptive(const AdaptiveSpec& spec);

} // namespace ratelimit::sim

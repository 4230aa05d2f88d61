#pragma once

#include "cli/output_settings.hpp"
#include "cli/run_observing.hpp"
#include "cli/store_opener.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ratelimit::cli {

// What `run` does with its command's end: --backoff-on CODE pauses the key for the backoff
// when the command exits with CODE; under --observe the command's answer is observed, and a
// 429 or 503 has paused the key as the server asked; either way, with --retries N, the
// command runs again in a new slot, up to N times.
struct RetryOptions {
  std::vector<int> backoff_on;
  core::Nanos backoff = core::k_nanos_per_second;
  core::Nanos backoff_max = 300 * core::k_nanos_per_second;
  int retries = 0;
  bool observe = false;
  core::Nanos max_pause = 0; // with `observe`
  // --adaptive with --backoff-on: an exit with a status of --backoff-on is a throttle to the
  // key's adaptive rate, an exit 0 a success.
  bool adaptive = false;
};

// The runs of one `run` command: each runs the command as a child and says whether to run it
// again.
class RetryingRuns {
public:
  RetryingRuns(const RetryOptions& options, StoreOpener& stores, const OutputSettings& output,
               std::string key, std::vector<std::string> command);

  // Runs the command once (the slot is granted; signals as the caller left them for it), in
  // the slot of the grant whose sequence is `grant` when known; observed under --observe.
  // `tick` every `tick_ns` while it runs (a lease to renew).
  ChildRun run(std::optional<std::int64_t> grant, const std::function<void()>& tick = {},
               std::int64_t tick_ns = 0);

  // After `run`: pauses the key for the backoff when the command exited with a status of
  // --backoff-on (on the store of `stores`, or where --on-store-error sends it), says
  // so on stderr (unless -q), and whether the command runs again.
  bool again(const ChildRun& run);

private:
  const RetryOptions& m_options;
  StoreOpener& m_stores;
  const OutputSettings& m_output;
  std::string m_key;
  std::vector<std::string> m_command;
  int m_attempt = 0;
  std::mt19937_64 m_random;
};

} // namespace ratelimit::cli

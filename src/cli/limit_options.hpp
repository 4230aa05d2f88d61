#pragma once

#include "cli/cli11_fwd.hpp"
#include "cli/mentioned_options.hpp"
#include "core/limit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ratelimit::cli {

inline constexpr std::size_t k_max_key_bytes = 1024;

// The options that describe a limited request, as typed.
struct LimitOptions {
  std::string key;
  std::vector<std::string> rates;
  std::optional<std::string> algorithm; // default: core::default_algorithm
  std::vector<std::string> bursts;
  std::optional<std::string> cost; // default 1
  bool adaptive = false;
};

// The same, checked and parsed.
struct LimitedRequest {
  std::string key;
  core::Algorithm algorithm = core::Algorithm::sliding_log;
  // Whether the call chose `algorithm` (-a, or -b for the token bucket) rather than take
  // the default: an existing key keeps its own algorithm unless one is chosen.
  bool algorithm_chosen = false;
  std::vector<core::Limit> limits;
  std::int64_t cost = 1;
  // The command reports its answer (run --observe): its grant counts as on its way to the
  // server until then (core::Request::answer_wait).
  bool awaits_answer = false;
  // --adaptive: the rates are ceilings of a rate learned from the answers
  // (core::Request::adaptive).
  bool adaptive = false;
};

// Adds -r, -a, -b, -c, --adaptive and the KEY positional (required when `key_required`).
void add_limit_options(CLI::App& command, LimitOptions& options, const MentionedOptions& mentioned,
                       bool key_required = true);
// -t/--timeout of the commands that wait for a slot (wait, run), when it may be named.
void add_wait_timeout_option(CLI::App& command, std::optional<std::string>& timeout,
                             const MentionedOptions& mentioned);

class ConfigFiles;

// Without --rate, takes the limit named KEY from the configuration files `config`: its rates,
// and its algorithm, bursts and cost where the command line gives none. Returns its timeout,
// for the commands that take one. Throws UsageError when there is neither a rate nor a
// definition, or a file cannot be read. With --rate, reads no file.
std::optional<std::string> apply_named_limit(LimitOptions& options, ConfigFiles& config);

// Parses and checks `options`; throws UsageError naming the bad value and the accepted form.
// Without `key_required`, an empty key is allowed (the key is optional).
LimitedRequest resolve(const LimitOptions& options, bool key_required = true);

// core::check_limits for limits given as options: throws UsageError, naming -r and --burst
// where they are the problem.
void check_limit_options(core::Algorithm algorithm, std::span<const core::Limit> limits,
                         std::int64_t cost, bool burst_given);

// Checks a key typed by the user: not empty, at most 1024 bytes; throws UsageError.
void check_key(std::string_view key);

// Parses a whole number of at least 1 for `option`; throws UsageError.
std::int64_t parse_positive(std::string_view option, std::string_view text);

} // namespace ratelimit::cli

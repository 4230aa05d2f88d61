#include "cli/limit_options.hpp"

#include "cli/config_file.hpp"
#include "cli/usage_error.hpp"
#include "util/key_text.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ratelimit::cli {

void add_limit_options(CLI::App& command, LimitOptions& options, const MentionedOptions& mentioned,
                       bool key_required) {
  auto* key = command.add_option("key", options.key, "The name of the shared limit");
  if (key_required) {
    key->required();
  }
  if (mentioned.any_of("-r,--rate")) {
    command
        .add_option("-r,--rate", options.rates,
                    "N/PERIOD, e.g. 10/s, 100/min, 3/1.5s; repeat for several limits; without "
                    "it, the limit named KEY in the configuration files (ratelimit limits)")
        ->option_text("N/PERIOD")
        ->allow_extra_args(false);
  }
  if (mentioned.any_of("-a,--algorithm")) {
    command
        .add_option("-a,--algorithm", options.algorithm,
                    "sliding-log (default: exact, never more than N in any PERIOD), "
                    "token-bucket (default with -b), leaky-bucket, fixed-window, "
                    "sliding-window; an existing key keeps its own unless -a or -b is given")
        ->option_text("NAME");
  }
  if (mentioned.any_of("-b,--burst")) {
    command
        .add_option("-b,--burst", options.bursts,
                    "Token-bucket capacity or leaky-bucket queue depth (default N); once for "
                    "all limits or once per --rate")
        ->option_text("N")
        ->allow_extra_args(false);
  }
  if (mentioned.any_of("-c,--cost")) {
    command.add_option("-c,--cost", options.cost, "Units this request takes (default 1)")
        ->option_text("N");
  }
  if (mentioned.any_of("--adaptive")) {
    command.add_flag("--adaptive", options.adaptive,
                     "The rates are ceilings: grants are spaced at a rate the key learns from its "
                     "answers (observe, run --observe, --backoff-on), cut on 429/503 and grown "
                     "back on success, shared by every process");
  }
}

void add_wait_timeout_option(CLI::App& command, std::optional<std::string>& timeout,
                             const MentionedOptions& mentioned) {
  if (mentioned.any_of("-t,--timeout")) {
    command
        .add_option("-t,--timeout", timeout,
                    "Give up at once (exit 1) if the slot is further away than this")
        ->option_text("DURATION");
  }
}

void check_key(std::string_view key) {
  if (key.empty()) {
    throw UsageError("invalid key \"\": expected a non-empty name of at most 1024 bytes");
  }
  if (key.size() > k_max_key_bytes) {
    throw UsageError(fmt::format("invalid key: it is {} bytes long; expected a non-empty name "
                                 "of at most 1024 bytes",
                                 key.size()));
  }
}

std::int64_t parse_positive(std::string_view option, std::string_view text) {
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view shown = text.substr(0, 64);
  if (error == std::errc::result_out_of_range) {
    throw UsageError(fmt::format("invalid {} \"{}\": too large; expected a whole number of at "
                                 "least 1",
                                 option, shown));
  }
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 1) {
    throw UsageError(
        fmt::format("invalid {} \"{}\": expected a whole number of at least 1", option, shown));
  }
  return value;
}

std::optional<std::string> apply_named_limit(LimitOptions& options, ConfigFiles& config) {
  if (!options.rates.empty()) {
    return std::nullopt;
  }
  if (options.key.empty()) {
    throw UsageError("no rate given; expected -r N/PERIOD, e.g. -r 10/s");
  }
  const auto& limits = config.config().limits;
  auto named = limits.find(options.key);
  if (named == limits.end()) {
    std::vector<std::string> files = config.files();
    throw UsageError(fmt::format("no rate for {}: give -r N/PERIOD, e.g. -r 10/s, or define "
                                 "[limits.{}] in {}",
                                 util::printable_key(options.key), table_name(options.key),
                                 fmt::join(files, " or ")));
  }
  const NamedLimit& limit = named->second;
  options.rates = limit.rates;
  bool algorithm_given = options.algorithm.has_value();
  if (!algorithm_given) {
    options.algorithm = limit.algorithm;
  }
  // The file's burst goes with the file's algorithm: an -a that takes no burst (a window)
  // drops it rather than failing on a --burst nobody gave.
  auto algorithm = core::parse_algorithm(options.algorithm.value_or("sliding-log"));
  bool takes_burst = !algorithm_given || (algorithm && core::takes_burst(*algorithm));
  if (options.bursts.empty() && takes_burst) {
    options.bursts = limit.bursts;
  }
  if (!options.cost) {
    options.cost = limit.cost;
  }
  options.adaptive = options.adaptive || limit.adaptive;
  return limit.timeout;
}

LimitedRequest resolve(const LimitOptions& options, bool key_required) {
  LimitedRequest request;
  request.key = options.key;
  if (key_required || !request.key.empty()) {
    check_key(request.key);
  }
  request.algorithm_chosen = options.algorithm || !options.bursts.empty();
  if (options.algorithm) {
    auto algorithm = core::parse_algorithm(*options.algorithm);
    if (!algorithm) {
      throw UsageError(algorithm.error());
    }
    request.algorithm = *algorithm;
  } else {
    request.algorithm = core::default_algorithm(!options.bursts.empty());
  }
  request.cost = parse_positive("cost", options.cost.value_or("1"));
  request.adaptive = options.adaptive;
  if (!options.bursts.empty() && options.bursts.size() != 1 &&
      options.bursts.size() != options.rates.size()) {
    throw UsageError(fmt::format("{} bursts for {} rates: give --burst once for all rates or "
                                 "once per --rate, in the same order",
                                 options.bursts.size(), options.rates.size()));
  }
  for (std::size_t i = 0; i < options.rates.size(); ++i) {
    auto rate = core::parse_rate(options.rates[i]);
    if (!rate) {
      throw UsageError(rate.error());
    }
    core::Limit limit{*rate, rate->count};
    if (!options.bursts.empty()) {
      limit.burst = parse_positive("burst", options.bursts[options.bursts.size() == 1 ? 0 : i]);
    }
    request.limits.push_back(limit);
  }
  check_limit_options(request.algorithm, request.limits, request.cost, !options.bursts.empty());
  return request;
}

void check_limit_options(core::Algorithm algorithm, std::span<const core::Limit> limits,
                         std::int64_t cost, bool burst_given) {
  // The two problems that are the options', in their words; the core's check says the rest.
  if (limits.empty()) {
    throw UsageError("no rate given; expected -r N/PERIOD, e.g. -r 10/s");
  }
  if (burst_given && !core::takes_burst(algorithm)) {
    throw UsageError(fmt::format("--burst does not apply to {}; it sets the capacity of "
                                 "token-bucket and the queue depth of leaky-bucket",
                                 core::algorithm_name(algorithm)));
  }
  if (auto problem = core::check_limits(algorithm, limits, cost, burst_given)) {
    throw UsageError(*problem);
  }
}

} // namespace ratelimit::cli

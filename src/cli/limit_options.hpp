#pragma once

#include "cli/cli11_fwd.hpp"
#include "core/limit.hpp"

#include <string>
#include <vector>

namespace ratelimit::cli {

inline constexpr std::size_t k_max_key_bytes = 1024;

// The options that describe a limited request, as typed.
struct LimitOptions {
  std::string key;
  std::vector<std::string> rates;
  std::string algorithm = "token-bucket";
  std::vector<std::string> bursts;
  std::string cost = "1";
};

// The same, checked and parsed.
struct LimitedRequest {
  std::string key;
  core::Algorithm algorithm = core::Algorithm::token_bucket;
  std::vector<core::Limit> limits;
  std::int64_t cost = 1;
};

// Adds -r, -a, -b, -c and the KEY positional (required when `key_required`).
void add_limit_options(CLI::App& command, LimitOptions& options, bool key_required = true);

// Parses and checks `options`; throws UsageError naming the bad value and the accepted form.
// Without `key_required`, an empty key is allowed (the key is optional).
LimitedRequest resolve(const LimitOptions& options, bool key_required = true);

// Checks a key typed by the user: not empty, at most 1024 bytes; throws UsageError.
void check_key(std::string_view key);

// Parses a whole number of at least 1 for `option`; throws UsageError.
std::int64_t parse_positive(std::string_view option, std::string_view text);

} // namespace ratelimit::cli

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::store {

// Redis key names. The state of KEY lives in the hash `PREFIX{KEY}` and a sliding log in
// `PREFIX{KEY}:t:PERIOD` and `PREFIX{KEY}:c:PERIOD` (PERIOD in microseconds). `{KEY}` is
// the Redis Cluster hash tag, so one decision's keys share a slot. In KEY, `%` and `}` are
// written `%25` and `%7D`: a `}` would end the tag early, and the escape keeps names
// one-to-one with keys.
std::string redis_key(std::string_view prefix, std::string_view key);

// The hash of `key`'s counters, `PREFIX{KEY}:n`: apart from the state, which it outlives.
std::string redis_counters_key(std::string_view prefix, std::string_view key);

// The hash that holds `key`'s state, for a sliding log the two sorted sets of its one log
// (whatever limits its calls name), and last the hash of its counters.
std::vector<std::string> redis_keys_of(std::string_view prefix, std::string_view key,
                                       bool sliding_log);

// The KEY whose hash is named `name`, or nothing when `name` is not such a hash (a sliding
// log, another prefix's key).
std::optional<std::string> key_of_redis_name(std::string_view prefix, std::string_view name);

// The KEY whose counters are named `name`, or nothing when `name` is not such a hash.
std::optional<std::string> key_of_redis_counters_name(std::string_view prefix,
                                                      std::string_view name);

// A SCAN MATCH pattern for every name under `prefix`, with glob characters escaped.
std::string redis_scan_pattern(std::string_view prefix);

} // namespace ratelimit::store

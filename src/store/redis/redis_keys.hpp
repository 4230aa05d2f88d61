#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::store::redis {

// Redis key names. The state of KEY lives in the hash `PREFIX{KEY}`, a sliding log in
// `PREFIX{KEY}:t` and `PREFIX{KEY}:c`, its counters in `PREFIX{KEY}:n`, its run slots in
// `PREFIX{KEY}:runs...`. `{KEY}` is the Redis Cluster hash tag, so every name of one key
// shares a slot (and a node). In KEY, `%` and `}` are written `%25` and `%7D`: a `}` would
// end the tag early, and the escape keeps names one-to-one with keys.
std::string redis_key(std::string_view prefix, std::string_view key);

// Why `prefix` cannot name keys (one line), or nothing when it can. A prefix takes no `{` or
// `}`: Redis Cluster places a name by the first `{...}` in it, which must be the key's own,
// else the names of one key land on several nodes (CROSSSLOT) or every key on one.
std::optional<std::string> redis_prefix_problem(std::string_view prefix);

// The hash of `key`'s counters, `PREFIX{KEY}:n`: apart from the state, which it outlives.
std::string redis_counters_key(std::string_view prefix, std::string_view key);

// Every name the script may touch for `key`, in the order of its KEYS: the hash that holds
// the state, the two sorted sets of its one sliding log (whatever limits its calls name,
// and whatever the algorithm: a call may find another algorithm's values), and the hash of
// its counters.
std::vector<std::string> redis_keys_of(std::string_view prefix, std::string_view key);

// The two sorted sets of the sliding log that version 1 kept per limit of `period`
// (microseconds), `PREFIX{KEY}:t:PERIOD` and `PREFIX{KEY}:c:PERIOD`: reset removes them.
std::vector<std::string> redis_legacy_log_keys(std::string_view prefix, std::string_view key,
                                               std::int64_t period);

// The KEY whose hash is named `name`, or nothing when `name` is not such a hash (a sliding
// log, another prefix's key).
std::optional<std::string> key_of_redis_name(std::string_view prefix, std::string_view name);

// The KEY whose counters are named `name`, or nothing when `name` is not such a hash.
std::optional<std::string> key_of_redis_counters_name(std::string_view prefix,
                                                      std::string_view name);

// A SCAN MATCH pattern for every name under `prefix`, with glob characters escaped.
std::string redis_scan_pattern(std::string_view prefix);

} // namespace ratelimit::store::redis

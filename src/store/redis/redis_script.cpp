#include "store/redis/redis_script.hpp"

#include "store/redis/redis_keys.hpp"
#include "util/key_text.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <limits>

namespace ratelimit::store::redis {

namespace {

// Reads the integers of an array reply one by one.
class ReplyReader {
public:
  explicit ReplyReader(const RedisReply& reply, std::size_t first = 1)
      : m_reply(reply), m_next(first) {}

  std::int64_t integer() {
    std::int64_t value = 0;
    if (!reply_integer(m_reply.at(m_next++), value)) {
      throw StoreError("redis: unexpected reply from the ratelimit script");
    }
    return value;
  }

  std::string text() {
    const redisReply& item = m_reply.at(m_next++);
    return item.str ? std::string(item.str, item.len) : std::string();
  }

private:
  const RedisReply& m_reply;
  std::size_t m_next;
};

std::string status_of(const RedisReply& reply) {
  if (reply.size() == 0 || !reply.at(0).str) {
    throw StoreError("redis: unexpected reply from the ratelimit script");
  }
  return std::string(reply.at(0).str, reply.at(0).len);
}

void add_limits(std::vector<std::string>& arguments, std::span<const core::Limit> limits) {
  arguments.push_back(std::to_string(limits.size()));
  for (const core::Limit& limit : limits) {
    arguments.push_back(std::to_string(limit.rate.count));
    arguments.push_back(std::to_string(limit.rate.period));
    arguments.push_back(std::to_string(limit.burst));
  }
}

// A limit and its slots, as inspect replies them: count period burst s1 s2 s3.
core::LimitState read_limit_state(ReplyReader& read) {
  core::LimitState limit;
  limit.limit.rate.count = read.integer();
  limit.limit.rate.period = read.integer();
  limit.limit.burst = read.integer();
  for (auto& slot : limit.slots) {
    slot = read.integer();
  }
  return limit;
}

std::string now_argument(std::optional<core::Nanos> now) {
  return now ? std::to_string(*now) : std::string();
}

} // namespace

void RedisScript::damaged(std::string_view key) const {
  throw DamagedState(fmt::format("{}: the state of key {} is damaged; forget it with "
                                 "`ratelimit reset {}`",
                                 m_connection.name(), util::printable_key(key),
                                 util::shell_word_for_key(key)));
}

void RedisScript::clock_beyond_range() const {
  throw StoreError(clock_beyond_range_message(m_connection.name()));
}

RedisScript::RedisScript(RedisConnection& connection, std::string prefix)
    : m_connection(connection), m_prefix(std::move(prefix)) {}

std::vector<std::string> RedisScript::keys_of(std::string_view key) const {
  return redis_keys_of(m_prefix, key);
}

core::Decision RedisScript::decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                                   std::span<const core::Limit> limits,
                                   const core::Request& request, bool explicit_now) {
  std::vector<std::string> arguments{"decide",
                                     explicit_now ? std::to_string(request.now) : std::string(),
                                     std::string(core::algorithm_name(algorithm)),
                                     std::to_string(request.cost),
                                     request.reserve ? "1" : "0",
                                     request.max_wait == std::numeric_limits<core::Nanos>::max()
                                         ? "-1"
                                         : std::to_string(request.max_wait),
                                     chosen ? "1" : "0"};
  add_limits(arguments, limits);
  RedisReply reply = m_connection.run_script(keys_of(key), arguments);
  std::string status = checked_status(key, reply);
  ReplyReader read(reply);
  if (status == "conflict") {
    auto stored = core::parse_algorithm(read.text());
    throw KeyConflict(key_conflict_message(key, stored ? *stored : algorithm, algorithm));
  }
  core::Decision decision;
  auto decided_by = core::parse_algorithm(read.text());
  if (!decided_by || (chosen && *decided_by != algorithm)) {
    throw StoreError("redis: unexpected reply from the ratelimit script");
  }
  decision.algorithm = *decided_by;
  decision.allowed = read.integer() != 0;
  decision.now = read.integer();
  decision.wait = read.integer();
  decision.binding = static_cast<std::size_t>(read.integer());
  decision.remaining = read.integer();
  decision.reset_after = read.integer();
  core::Nanos at = read.integer();
  std::int64_t count = read.integer();
  if (count != static_cast<std::int64_t>(limits.size()) || decision.binding >= limits.size()) {
    throw StoreError("redis: unexpected reply from the ratelimit script");
  }
  std::vector<std::int64_t> markers;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    core::LimitReport report;
    report.remaining = read.integer();
    report.reset_after = read.integer();
    report.retry_after = read.integer();
    decision.limits.push_back(report);
    markers.push_back(read.integer());
  }
  std::int64_t refusal = read.integer();
  if (refusal < 0 || refusal > static_cast<std::int64_t>(core::Refusal::too_far) ||
      (refusal == 0) != decision.allowed) {
    throw StoreError("redis: unexpected reply from the ratelimit script");
  }
  decision.refusal = static_cast<core::Refusal>(refusal);
  decision.paused_until = read.integer();
  if (decision.allowed) {
    decision.grant = {at, request.cost, std::move(markers)};
  }
  return decision;
}

void RedisScript::give_back(std::string_view key, core::Algorithm algorithm,
                            std::span<const core::Limit> limits, const core::Grant& grant,
                            std::optional<core::Nanos> now) {
  std::vector<std::string> arguments{"give_back", now_argument(now),
                                     std::string(core::algorithm_name(algorithm)),
                                     std::to_string(grant.at), std::to_string(grant.cost)};
  add_limits(arguments, limits);
  for (std::size_t i = 0; i < limits.size(); ++i) {
    arguments.push_back(std::to_string(i < grant.markers.size() ? grant.markers[i] : 0));
  }
  checked_status(key, m_connection.run_script(keys_of(key), arguments));
}

std::optional<KeyStatus> RedisScript::inspect(std::string_view key,
                                              std::optional<core::Nanos> now) {
  std::string arguments[] = {"inspect", now_argument(now)};
  RedisReply reply = m_connection.run_script(keys_of(key), arguments);
  if (checked_status(key, reply) == "none") {
    return std::nullopt;
  }
  ReplyReader read(reply);
  KeyStatus status;
  status.key = std::string(key);
  std::string algorithm_name = read.text();
  auto algorithm = core::parse_algorithm(algorithm_name);
  if (!algorithm && !algorithm_name.empty()) {
    damaged(key);
  }
  // A key that holds only a pause has no algorithm (the placeholder stays) and no limits.
  status.state.algorithm = algorithm ? *algorithm : core::Algorithm::token_bucket;
  status.state.clock = read.integer();
  core::Decision& standing = status.standing;
  standing.algorithm = status.state.algorithm;
  standing.now = read.integer();
  standing.allowed = read.integer() != 0;
  standing.wait = read.integer();
  standing.refusal = standing.allowed ? core::Refusal::none : core::Refusal::later;
  std::int64_t binding = read.integer();
  standing.remaining = read.integer();
  standing.reset_after = read.integer();
  standing.paused_until = read.integer();
  std::int64_t count = read.integer();
  if (count < (algorithm ? 1 : 0) || (!algorithm && count != 0) || binding < 0 ||
      binding >= std::max<std::int64_t>(count, 1)) {
    throw StoreError("redis: unexpected reply from the ratelimit script");
  }
  standing.binding = static_cast<std::size_t>(binding);
  for (std::int64_t i = 0; i < count; ++i) {
    status.state.limits.push_back(read_limit_state(read));
    core::LimitReport report;
    report.remaining = read.integer();
    report.reset_after = read.integer();
    report.retry_after = read.integer();
    standing.limits.push_back(report);
  }
  status.state.log_period = read.integer();
  status.state.paused_until = read.integer();
  status.counters.granted = read.integer();
  status.counters.limited = read.integer();
  status.counters.waited_us = read.integer();
  std::int64_t remembered = read.integer();
  if (remembered < 0) {
    throw StoreError("redis: unexpected reply from the ratelimit script");
  }
  for (std::int64_t i = 0; i < remembered; ++i) {
    status.state.remembered.push_back(read_limit_state(read));
  }
  return status;
}

PauseStanding RedisScript::pause(std::string_view key, core::Nanos duration,
                                 std::optional<core::Nanos> now) {
  std::string arguments[] = {"pause", now_argument(now), std::to_string(duration)};
  RedisReply reply = m_connection.run_script(keys_of(key), arguments);
  return pause_reply(key, reply);
}

PauseStanding RedisScript::pause_of(std::string_view key, std::optional<core::Nanos> now) {
  std::string arguments[] = {"pause_of", now_argument(now)};
  RedisReply reply = m_connection.run_script(keys_of(key), arguments);
  return pause_reply(key, reply);
}

void RedisScript::add_to_counters(std::string_view key, bool granted, std::int64_t waited) {
  std::string arguments[] = {"count", "", granted ? "1" : "0", std::to_string(waited)};
  checked_status(key, m_connection.run_script(keys_of(key), arguments));
}

std::string RedisScript::checked_status(std::string_view key, const RedisReply& reply) const {
  std::string status = status_of(reply);
  if (status == "clock") {
    clock_beyond_range();
  }
  if (status == "damaged") {
    damaged(key);
  }
  return status;
}

PauseStanding RedisScript::pause_reply(std::string_view key, const RedisReply& reply) const {
  checked_status(key, reply);
  ReplyReader read(reply);
  PauseStanding standing;
  standing.now = read.integer();
  standing.paused_until = read.integer();
  return standing;
}

bool RedisScript::reset(std::string_view key) {
  std::string arguments[] = {"reset", ""};
  std::vector<std::string> keys = keys_of(key);
  // A sliding log of version 1 may have left a log per limit, named by the periods its hash
  // holds: the script names them and deletes nothing until they are declared too. A
  // concurrent call may change the limits in between: then it asks again.
  for (int attempt = 1; attempt <= 5; ++attempt) {
    RedisReply reply = m_connection.run_script(keys, arguments);
    if (reply->type != REDIS_REPLY_ARRAY) {
      return reply.integer() != 0;
    }
    if (status_of(reply) != "declare") {
      throw StoreError("redis: unexpected reply from the ratelimit script");
    }
    keys = keys_of(key);
    ReplyReader read(reply);
    for (std::size_t i = 1; i < reply.size(); ++i) {
      for (std::string& name : redis_legacy_log_keys(m_prefix, key, read.integer())) {
        keys.push_back(std::move(name));
      }
    }
  }
  throw StoreError(fmt::format("{}: key {} was not reset: its limits kept changing meanwhile",
                               m_connection.name(), util::printable_key(key)));
}

} // namespace ratelimit::store::redis

#include "store/redis/redis_script.hpp"

#include "store/redis/redis_keys.hpp"
#include "util/key_text.hpp"

#include <algorithm>
#include <charconv>
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

// The server budget's standing that follows in a reply (remaining, -1 for none; reset) into
// `decision`.
void read_budget(ReplyReader& read, core::Decision& decision) {
  std::int64_t remaining = read.integer();
  core::Nanos reset = read.integer();
  if (remaining >= 0) {
    decision.budget = core::BudgetStanding{remaining, reset};
  }
}

// The integers of a stored list ("a b c ..."), `width` at a time, or nothing when it is not
// such a list.
std::optional<std::vector<std::vector<std::int64_t>>> stored_list(std::string_view text,
                                                                  std::size_t width) {
  std::vector<std::int64_t> values;
  while (!text.empty()) {
    std::size_t end = text.find(' ');
    std::string_view word = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (word.empty()) {
      continue;
    }
    std::int64_t value = 0;
    auto [rest, error] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (error != std::errc() || rest != word.data() + word.size()) {
      return std::nullopt;
    }
    values.push_back(value);
  }
  if (values.size() % width != 0) {
    return std::nullopt;
  }
  std::vector<std::vector<std::int64_t>> list;
  for (std::size_t i = 0; i < values.size(); i += width) {
    list.emplace_back(values.begin() + static_cast<std::ptrdiff_t>(i),
                      values.begin() + static_cast<std::ptrdiff_t>(i + width));
  }
  return list;
}

// The server word of grant sequence `seq` stored in the fields budget and awaited (times in
// microseconds, as stored), or nothing when they cannot be read.
std::optional<core::ServerWord> stored_word(std::int64_t seq, std::string_view budget,
                                            std::string_view awaited) {
  core::ServerWord word;
  auto entries = stored_list(budget, 2);
  auto answers = stored_list(awaited, 4);
  if (!entries || !answers) {
    return std::nullopt;
  }
  word.grant_seq = seq;
  for (const auto& entry : *entries) {
    word.budget.push_back({entry[0], entry[1]});
  }
  for (const auto& answer : *answers) {
    word.awaited.push_back({answer[0], answer[1], answer[2], answer[3]});
  }
  return word;
}

// The adaptive rate stored in the field adaptive (times in microseconds, as stored), or
// nothing when it cannot be read.
std::optional<core::AdaptiveState> decode_adaptive(std::string_view text) {
  auto values = stored_list(text, 6);
  if (!values || values->size() != 1) {
    return std::nullopt;
  }
  const std::vector<std::int64_t>& v = values->front();
  return core::AdaptiveState{v[0], v[1], v[2], v[3], v[4], v[5]};
}

// Policies as the script stores them: a line each, "quota window field<TAB>name" (window in
// microseconds, 0 for none). Field names are tokens and policy names printable ASCII
// (RFC 9651), with neither tabs nor line breaks.
std::string encode_policies(const std::vector<core::LearnedPolicy>& policies) {
  std::string text;
  for (const core::LearnedPolicy& policy : policies) {
    std::string name = policy.name;
    std::replace_if(
        name.begin(), name.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
    text += fmt::format("{} {} {}\t{}\n", policy.quota,
                        core::ceil_div(policy.window, core::k_nanos_per_micro), policy.field, name);
  }
  return text;
}

std::optional<std::vector<core::LearnedPolicy>> decode_policies(std::string_view text) {
  std::vector<core::LearnedPolicy> policies;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      return std::nullopt;
    }
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
      return std::nullopt;
    }
    std::string_view head = line.substr(0, tab);
    std::size_t first = head.find(' ');
    std::size_t second = first == std::string_view::npos ? first : head.find(' ', first + 1);
    if (second == std::string_view::npos) {
      return std::nullopt;
    }
    auto numbers = stored_list(head.substr(0, second), 2);
    if (!numbers || numbers->size() != 1) {
      return std::nullopt;
    }
    policies.push_back({std::string(head.substr(second + 1)), std::string(line.substr(tab + 1)),
                        (*numbers)[0][0], (*numbers)[0][1] * core::k_nanos_per_micro});
  }
  return policies;
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
                                     chosen ? "1" : "0",
                                     std::to_string(request.answer_wait)};
  add_limits(arguments, limits);
  arguments.push_back(request.adaptive ? "1" : "0");
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
  std::int64_t seq = read.integer();
  decision.budget_until = read.integer();
  read_budget(read, decision);
  decision.adaptive_rate = read.integer();
  decision.spaced_until = read.integer();
  core::Nanos paced = read.integer();
  if (decision.allowed) {
    decision.grant = {at, request.cost, std::move(markers), seq, paced};
  }
  return decision;
}

void RedisScript::give_back(std::string_view key, core::Algorithm algorithm,
                            std::span<const core::Limit> limits, const core::Grant& grant,
                            std::optional<core::Nanos> now) {
  std::vector<std::string> arguments{"give_back",
                                     now_argument(now),
                                     std::string(core::algorithm_name(algorithm)),
                                     std::to_string(grant.at),
                                     std::to_string(grant.cost),
                                     std::to_string(grant.seq)};
  add_limits(arguments, limits);
  for (std::size_t i = 0; i < limits.size(); ++i) {
    arguments.push_back(std::to_string(i < grant.markers.size() ? grant.markers[i] : 0));
  }
  arguments.push_back(std::to_string(grant.paced));
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
  std::int64_t seq = read.integer();
  std::string budget = read.text();
  std::string awaited = read.text();
  auto word = stored_word(seq, budget, awaited);
  auto policies = decode_policies(read.text());
  if (!word || !policies) {
    damaged(key);
  }
  status.state.server = std::move(*word);
  status.state.server.policies = std::move(*policies);
  status.state.server.answered_at = read.integer();
  status.state.server.answer_latency = read.integer();
  status.counters.throttled = read.integer();
  standing.budget_until = read.integer();
  read_budget(read, standing);
  std::string adaptive = read.text();
  if (!adaptive.empty()) {
    status.state.server.adaptive = decode_adaptive(adaptive);
    if (!status.state.server.adaptive) {
      damaged(key);
    }
  }
  return status;
}

PauseStanding RedisScript::pause(std::string_view key, core::Nanos duration,
                                 std::optional<core::Nanos> now) {
  std::string arguments[] = {"pause", now_argument(now), std::to_string(duration)};
  RedisReply reply = m_connection.run_script(keys_of(key), arguments);
  return pause_reply(key, reply);
}

PauseStanding RedisScript::pause_of(std::string_view key, std::optional<core::Nanos> now,
                                    const core::Grant* grant) {
  std::string arguments[] = {"pause_of", now_argument(now),
                             grant ? std::to_string(grant->seq) : std::string(),
                             grant ? std::to_string(grant->at) : std::string()};
  RedisReply reply = m_connection.run_script(keys_of(key), arguments);
  PauseStanding standing = pause_reply(key, reply);
  ReplyReader read(reply, 3);
  standing.overdrawn_until = read.integer();
  standing.probe_until = read.integer();
  return standing;
}

PauseStanding RedisScript::observe(std::string_view key, const core::Observation& observation,
                                   std::optional<core::Nanos> now) {
  std::vector<std::string> arguments{"observe",
                                     now_argument(now),
                                     std::to_string(observation.pause),
                                     observation.throttled ? "1" : "0",
                                     std::to_string(observation.grant.value_or(-1)),
                                     encode_policies(observation.policies),
                                     std::to_string(observation.standings.size())};
  for (const core::SaidStanding& standing : observation.standings) {
    arguments.push_back(std::to_string(standing.remaining));
    arguments.push_back(std::to_string(standing.reset_after));
  }
  arguments.push_back(observation.answered ? "1" : "0");
  RedisReply reply = m_connection.run_script(keys_of(key), arguments);
  PauseStanding standing = pause_reply(key, reply);
  ReplyReader read(reply, 3);
  std::int64_t remaining = read.integer();
  core::Nanos reset = read.integer();
  if (remaining >= 0) {
    standing.budget = core::BudgetStanding{remaining, reset};
  }
  return standing;
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

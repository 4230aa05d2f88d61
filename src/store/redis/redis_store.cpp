#include "store/redis/redis_store.hpp"

#include "core/rate.hpp"
#include "store/redis/redis_cluster.hpp"
#include "store/redis/redis_keys.hpp"
#include "store/redis/redis_run_slots.hpp"
#include "util/key_text.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <limits>
#include <map>
#include <set>

namespace ratelimit::store::redis {

namespace {

constexpr std::int64_t k_micro = core::k_nanos_per_micro;
// Integers up to 2^53 are exact in the script's doubles.
constexpr std::int64_t k_largest_exact = (std::int64_t{1} << 53) - 1;

core::Nanos to_nanos(std::int64_t micros) {
  return micros * k_micro;
}

void decision_to_nanos(core::Decision& decision) {
  decision.now = to_nanos(decision.now);
  decision.wait = to_nanos(decision.wait);
  decision.reset_after = to_nanos(decision.reset_after);
  decision.paused_until = to_nanos(decision.paused_until);
  for (core::LimitReport& limit : decision.limits) {
    limit.reset_after = to_nanos(limit.reset_after);
    limit.retry_after = to_nanos(limit.retry_after);
  }
  // The markers stay as the script made them: only give_back reads them.
  decision.grant.at = to_nanos(decision.grant.at);
  decision.grant.paced = to_nanos(decision.grant.paced);
  decision.budget_until = to_nanos(decision.budget_until);
  decision.spaced_until = to_nanos(decision.spaced_until);
  if (decision.budget) {
    decision.budget->reset = to_nanos(decision.budget->reset);
  }
}

} // namespace

std::vector<core::Limit> limits_in_micros(std::span<const core::Limit> limits, std::int64_t cost) {
  std::vector<core::Limit> result;
  for (const core::Limit& limit : limits) {
    if (limit.burst > k_largest_exact || cost > k_largest_exact) {
      throw UnsupportedRequest(fmt::format("the redis store counts up to {}: burst {} and cost "
                                           "{} must not exceed it",
                                           k_largest_exact, limit.burst, cost));
    }
    core::Limit micros = limit;
    micros.rate.period = core::ceil_div(limit.rate.period, k_micro);
    result.push_back(micros);
  }
  return result;
}

RedisStore::RedisStore(const RedisLocation& location, std::string prefix, core::Nanos timeout,
                       Clock clock)
    : m_connection(location, timeout), m_prefix(std::move(prefix)), m_clock(std::move(clock)),
      m_script(m_connection, m_prefix) {}

std::optional<core::Nanos> RedisStore::script_now() const {
  if (!m_clock) {
    return std::nullopt;
  }
  return core::floor_div(m_clock(), k_micro);
}

core::Decision RedisStore::decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                                  std::span<const core::Limit> limits, core::Request request) {
  std::vector<core::Limit> micros = limits_in_micros(limits, request.cost);
  if (request.max_wait != std::numeric_limits<core::Nanos>::max()) {
    // Waiting at most max_wait ns means at most floor(max_wait / 1000) whole microseconds.
    request.max_wait = request.max_wait / k_micro;
  }
  // Awaited at least as long as asked.
  request.answer_wait = core::ceil_div(request.answer_wait, k_micro);
  std::optional<core::Nanos> explicit_now = script_now();
  request.now = explicit_now.value_or(0);
  core::Decision decision =
      m_script.decide(key, algorithm, chosen, micros, request, explicit_now.has_value());
  decision_to_nanos(decision);
  return decision;
}

void RedisStore::give_back(std::string_view key, core::Algorithm algorithm,
                           std::span<const core::Limit> limits, const core::Grant& grant) {
  core::Grant micros = grant;
  micros.at = grant.at / k_micro;
  micros.paced = grant.paced / k_micro;
  m_script.give_back(key, algorithm, limits_in_micros(limits, grant.cost), micros, script_now());
}

namespace {

// Every name matching `pattern` on the server of `connection`.
std::vector<std::string> scan_names(RedisConnection& connection, const std::string& pattern) {
  std::vector<std::string> names;
  std::string cursor = "0";
  do {
    std::string call[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
    RedisReply reply = connection.command(call);
    if (reply.size() != 2) {
      connection.fail("SCAN: unexpected reply");
    }
    cursor = std::string(reply.at(0).str, reply.at(0).len);
    const redisReply& batch = reply.at(1);
    for (std::size_t i = 0; i < batch.elements; ++i) {
      names.emplace_back(batch.element[i]->str, batch.element[i]->len);
    }
  } while (cursor != "0");
  return names;
}

// A key found by a scan, and the connection to the server that holds it.
struct FoundKey {
  std::string key;
  RedisConnection* connection;
};

// `found` in the order of the keys, each once: a key whose slot moved during the scan may
// have been seen on two masters.
void sort_found(std::vector<FoundKey>& found) {
  std::stable_sort(found.begin(), found.end(),
                   [](const FoundKey& a, const FoundKey& b) { return a.key < b.key; });
  found.erase(std::unique(found.begin(), found.end(),
                          [](const FoundKey& a, const FoundKey& b) { return a.key == b.key; }),
              found.end());
}

// The keys to read: `keys`, each through `connection`, which follows redirections to the
// master of its slot; when `keys` is empty, every key that `key_of` finds among the names that
// `scan` lists, on the server it was found on.
template <typename Scan, typename KeyOf>
std::vector<FoundKey> keys_to_read(std::span<const std::string> keys, RedisConnection& connection,
                                   Scan scan, KeyOf key_of) {
  std::vector<FoundKey> found;
  if (!keys.empty()) {
    for (const std::string& key : keys) {
      found.push_back({key, &connection});
    }
    return found;
  }
  for (const auto& node : scan()) {
    for (const std::string& name : node.names) {
      if (std::optional<std::string> key = key_of(name)) {
        found.push_back({std::move(*key), node.connection});
      }
    }
  }
  sort_found(found);
  return found;
}

} // namespace

std::vector<RedisStore::ScannedNames> RedisStore::scan() {
  std::string pattern = redis_scan_pattern(m_prefix);
  // Asked at each scan, never on a decision's path: a cluster's masters may change.
  std::vector<RedisLocation> masters = redis_cluster_masters(m_connection);
  m_masters.clear();
  std::vector<ScannedNames> result;
  if (masters.empty()) {
    result.push_back({&m_connection, scan_names(m_connection, pattern)});
    return result;
  }
  for (const RedisLocation& master : masters) {
    m_masters.push_back(std::make_unique<RedisConnection>(master, m_connection.timeout()));
    result.push_back({m_masters.back().get(), scan_names(*m_masters.back(), pattern)});
  }
  return result;
}

std::vector<KeyStatus> RedisStore::status(std::span<const std::string> keys) {
  std::vector<FoundKey> found = keys_to_read(
      keys, m_connection, [this] { return scan(); },
      [this](std::string_view name) { return key_of_redis_name(m_prefix, name); });
  std::vector<KeyStatus> result;
  for (const auto& [key, connection] : found) {
    std::optional<KeyStatus> status;
    try {
      status = RedisScript(*connection, m_prefix).inspect(key, script_now());
    } catch (const DamagedState& error) {
      result.push_back({key, error.what(), {}, {}, {}});
      continue;
    }
    if (!status) {
      continue;
    }
    // The script refuses values out of core::within_bounds's range (in microseconds), so
    // none of these products overflows.
    status->state.clock = to_nanos(status->state.clock);
    status->state.log_period = to_nanos(status->state.log_period);
    status->state.paused_until = to_nanos(status->state.paused_until);
    const std::array<core::SlotKind, 3>& kinds = core::info(status->state.algorithm).slots;
    for (auto* limits : {&status->state.limits, &status->state.remembered}) {
      for (core::LimitState& limit : *limits) {
        limit.limit.rate.period = to_nanos(limit.limit.rate.period);
        for (std::size_t i = 0; i < kinds.size(); ++i) {
          if (kinds[i] == core::SlotKind::time) {
            limit.slots[i] = to_nanos(limit.slots[i]);
          }
        }
      }
    }
    for (core::BudgetEntry& entry : status->state.server.budget) {
      entry.reset = to_nanos(entry.reset);
    }
    status->state.server.answered_at = to_nanos(status->state.server.answered_at);
    if (auto& adaptive = status->state.server.adaptive) {
      for (core::Nanos* time :
           {&adaptive->cut_at, &adaptive->measured_from, &adaptive->clock, &adaptive->next_slot}) {
        *time = to_nanos(*time);
      }
    }
    status->state.server.answer_latency = to_nanos(status->state.server.answer_latency);
    for (core::AwaitedAnswer& awaited : status->state.server.awaited) {
      awaited.at = to_nanos(awaited.at);
      awaited.until = to_nanos(awaited.until);
    }
    decision_to_nanos(status->standing);
    result.push_back(std::move(*status));
  }
  return result;
}

namespace {

// The counters of `key` on `connection`, if it has any (they may have expired since a scan
// found them).
std::optional<KeyCounters> counters_on(RedisConnection& connection, std::string_view prefix,
                                       const std::string& key) {
  std::string call[] = {"HMGET", redis_counters_key(prefix, key), "granted", "limited",
                        "waited_us"};
  RedisReply reply = connection.command(call);
  if (reply.size() != 3) {
    connection.fail("HMGET: unexpected reply");
  }
  KeyCounters counters;
  std::int64_t* fields[] = {&counters.granted, &counters.limited, &counters.waited_us};
  bool gone = true;
  for (std::size_t i = 0; i < 3; ++i) {
    const redisReply& field = reply.at(i);
    if (field.type == REDIS_REPLY_NIL) {
      continue;
    }
    gone = false;
    if (!reply_integer(field, *fields[i])) {
      throw DamagedState(fmt::format("{}: the counters of key {} are damaged; forget them with "
                                     "`ratelimit reset {}`",
                                     connection.name(), util::printable_key(key),
                                     util::shell_word_for_key(key)));
    }
  }
  if (gone) { // expired, or not a hash of ours
    return std::nullopt;
  }
  return counters;
}

} // namespace

std::vector<NamedCounters> RedisStore::counters(std::span<const std::string> keys) {
  std::vector<FoundKey> found = keys_to_read(
      keys, m_connection, [this] { return scan(); },
      [this](std::string_view name) { return key_of_redis_counters_name(m_prefix, name); });
  std::vector<NamedCounters> result;
  for (const auto& [key, connection] : found) {
    if (auto counters = counters_on(*connection, m_prefix, key)) {
      result.push_back({key, *counters});
    }
  }
  return result;
}

void RedisStore::add_to_counters(std::string_view key, bool granted, core::Nanos waited) {
  m_script.add_to_counters(key, granted, waited / k_micro);
}

std::size_t RedisStore::reset(std::span<const std::string> keys, bool all) {
  if (!all) {
    std::size_t removed = 0;
    for (const std::string& key : keys) {
      bool existed = m_script.reset(key);
      // Its run slots too: the commands that hold them finish without them.
      std::vector<std::string> call{"DEL"};
      for (std::string& name : RedisRunSlots::names_of(m_prefix, key)) {
        call.push_back(std::move(name));
      }
      existed = m_connection.command(call).integer() > 0 || existed;
      removed += existed ? 1 : 0;
    }
    return removed;
  }
  std::set<std::string> removed;
  for (const ScannedNames& node : scan()) {
    // On Redis Cluster one UNLINK takes the names of one slot only (else CROSSSLOT).
    std::map<int, std::vector<std::string>> by_slot;
    for (const std::string& name : node.names) {
      by_slot[m_masters.empty() ? 0 : redis_hash_slot(name)].push_back(name);
      // A key counts once, whether it had a state, counters or both.
      std::optional<std::string> key = key_of_redis_name(m_prefix, name);
      if (!key) {
        key = key_of_redis_counters_name(m_prefix, name);
      }
      if (key) {
        removed.insert(std::move(*key));
      }
    }
    for (const auto& [slot, names] : by_slot) {
      for (std::size_t first = 0; first < names.size(); first += 500) {
        std::vector<std::string> call{"UNLINK"};
        call.insert(call.end(), names.begin() + static_cast<std::ptrdiff_t>(first),
                    names.begin() +
                        static_cast<std::ptrdiff_t>(std::min(names.size(), first + 500)));
        node.connection->command(call);
      }
    }
  }
  return removed.size();
}

PauseStanding RedisStore::pause(std::string_view key, core::Nanos duration) {
  // Rounded up to whole microseconds: a pause is never shorter than asked.
  PauseStanding standing = m_script.pause(key, core::ceil_div(duration, k_micro), script_now());
  return {to_nanos(standing.now), to_nanos(standing.paused_until), 0, {}, 0};
}

PauseStanding RedisStore::pause_of(std::string_view key, const core::Grant* grant) {
  std::optional<core::Grant> micros;
  if (grant) {
    micros = *grant;
    micros->at = grant->at / k_micro;
  }
  PauseStanding standing = m_script.pause_of(key, script_now(), micros ? &*micros : nullptr);
  return {to_nanos(standing.now),
          to_nanos(standing.paused_until),
          to_nanos(standing.overdrawn_until),
          {},
          to_nanos(standing.probe_until)};
}

PauseStanding RedisStore::observe(std::string_view key, const core::Observation& observation) {
  // Durations rounded up to whole microseconds: a pause is never shorter than asked, a
  // budget never ends earlier.
  core::Observation micros = observation;
  micros.pause = core::ceil_div(observation.pause, k_micro);
  for (core::SaidStanding& standing : micros.standings) {
    standing.reset_after = core::ceil_div(standing.reset_after, k_micro);
  }
  PauseStanding standing = m_script.observe(key, micros, script_now());
  standing.now = to_nanos(standing.now);
  standing.paused_until = to_nanos(standing.paused_until);
  if (standing.budget) {
    standing.budget->reset = to_nanos(standing.budget->reset);
  }
  return standing;
}

std::vector<std::string> RedisStore::collect_garbage() {
  return {};
}

core::Nanos RedisStore::now() {
  if (m_clock) {
    return to_nanos(*script_now());
  }
  std::string call[] = {"TIME"};
  RedisReply reply = m_connection.command(call);
  std::int64_t seconds = 0;
  std::int64_t micros = 0;
  if (reply.size() != 2 || !reply_integer(reply.at(0), seconds) ||
      !reply_integer(reply.at(1), micros)) {
    m_connection.fail("TIME: unexpected reply");
  }
  return seconds * core::k_nanos_per_second + to_nanos(micros);
}

std::unique_ptr<RunSlots> RedisStore::run_slots(core::Nanos lease) {
  return std::make_unique<RedisRunSlots>(m_connection, m_prefix, lease, m_clock);
}

std::vector<RunEntry> RedisStore::run_entries(std::span<const std::string> keys) {
  if (!keys.empty()) {
    return RedisRunSlots::entries(m_connection, m_prefix, keys);
  }
  std::vector<FoundKey> found;
  for (const ScannedNames& node : scan()) {
    for (const std::string& name : node.names) {
      constexpr std::string_view k_suffix = ":runs";
      if (name.ends_with(k_suffix)) {
        if (auto key = key_of_redis_name(
                m_prefix, std::string_view(name).substr(0, name.size() - k_suffix.size()))) {
          found.push_back({std::move(*key), node.connection});
        }
      }
    }
  }
  sort_found(found);
  std::vector<RunEntry> result;
  for (const auto& [key, connection] : found) {
    for (RunEntry& entry : RedisRunSlots::entries(*connection, m_prefix, std::span(&key, 1))) {
      result.push_back(std::move(entry));
    }
  }
  return result;
}

} // namespace ratelimit::store::redis

#include "store/redis/redis_run_slots.hpp"

#include "store/redis/redis_keys.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"
#include "util/signals.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <limits>
#include <run_slots_script.hpp>
#include <unistd.h>

namespace ratelimit::store::redis {

namespace {

constexpr core::Nanos k_micro = core::k_nanos_per_micro;

constexpr const char* k_script = k_run_slots_script;

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) {
    return "localhost";
  }
  return name;
}

std::int64_t element(const RedisReply& reply, std::size_t index) {
  std::int64_t value = 0;
  if (!reply_integer(reply.at(index), value)) {
    throw StoreError("redis: unexpected reply of the run slots' script");
  }
  return value;
}

// A duration in microseconds, rounded up: a wait is never short.
core::Nanos micros_up(core::Nanos duration) {
  return (duration + k_micro - 1) / k_micro;
}

} // namespace

RedisRunSlots::RedisRunSlots(RedisConnection& connection, std::string prefix, core::Nanos lease,
                             Clock clock)
    : m_connection(connection), m_prefix(std::move(prefix)), m_lease(lease),
      m_clock(std::move(clock)) {}

std::vector<std::string> RedisRunSlots::names_of(std::string_view prefix, std::string_view key) {
  std::string base = redis_key(prefix, key);
  return {base + ":runs", base + ":runs:lease", base + ":runs:queue"};
}

RedisReply RedisRunSlots::call(std::vector<std::string> arguments) {
  // The script's now: empty for the server's clock.
  arguments.insert(arguments.begin() + 1, m_clock ? std::to_string(m_clock() / k_micro) : "");
  return m_connection.run_source(k_script, m_names, arguments);
}

StartAnswer RedisRunSlots::join(std::string_view key, std::int64_t cost, core::Nanos hold,
                                std::span<const core::RunCap> caps) {
  m_names = names_of(m_prefix, key);
  // The key's state, for its pause.
  m_names.push_back(redis_key(m_prefix, key));
  m_cost = cost;
  m_hold = hold;
  m_ticket = 0;
  return attempt(caps);
}

StartAnswer RedisRunSlots::try_start(std::span<const core::RunCap> caps) {
  return attempt(caps);
}

StartAnswer RedisRunSlots::attempt(std::span<const core::RunCap> caps) {
  std::vector<std::string> arguments{"attempt",
                                     std::to_string(m_ticket),
                                     std::to_string(m_cost),
                                     std::to_string(micros_up(m_hold)),
                                     std::to_string(micros_up(m_lease)),
                                     std::to_string(::getpid()),
                                     host_name()};
  for (const core::RunCap& cap : caps) {
    arguments.push_back(std::to_string(cap.count));
    arguments.push_back(std::to_string(micros_up(cap.hold)));
  }
  RedisReply reply = call(std::move(arguments));
  if (reply.size() != 10) {
    m_connection.fail("unexpected reply of the run slots' script");
  }
  StartAnswer answer;
  answer.started = element(reply, 0) == 1;
  answer.behind = element(reply, 1) == 1;
  std::int64_t kind = element(reply, 2);
  answer.admission.admission = kind == 0   ? core::Admission::now
                               : kind == 1 ? core::Admission::at
                                           : core::Admission::on_exit;
  answer.admission.at = element(reply, 3) * k_micro;
  answer.admission.binding = static_cast<std::size_t>(element(reply, 4));
  answer.now = element(reply, 5) * k_micro;
  m_now = answer.now;
  m_ticket = element(reply, 6);
  m_next_expiry = element(reply, 8) * k_micro;
  answer.admission.paused_until = element(reply, 9) * k_micro;
  if (answer.started) {
    wake(element(reply, 7));
  }
  return answer;
}

void RedisRunSlots::wake(std::int64_t ticket) {
  if (ticket == 0 || ticket == m_ticket) {
    return;
  }
  std::string list = m_names[0] + ":wake:" + std::to_string(ticket);
  std::string keys[] = {list};
  std::string arguments[] = {
      std::to_string(std::max<core::Nanos>(m_lease, k_run_slots_linger) / core::k_nanos_per_milli)};
  m_connection.run_source("redis.call('RPUSH', KEYS[1], 1) redis.call('LTRIM', KEYS[1], -4, -1) "
                          "redis.call('PEXPIRE', KEYS[1], ARGV[1]) return 1",
                          keys, arguments);
}

int RedisRunSlots::wait_for_change(core::Nanos timeout, util::InterruptSignals& signals) {
  // Look again before the others' earliest lease runs out (one may have died), and in time to
  // renew this waiter's own lease.
  core::Nanos sleep = std::min(timeout, m_lease / 3);
  if (m_next_expiry > 0) {
    sleep =
        std::min(sleep, std::max<core::Nanos>(m_next_expiry - m_now, 0) + core::k_nanos_per_milli);
  }
  sleep = std::max<core::Nanos>(sleep, core::k_nanos_per_milli);
  std::string list = m_names[0] + ":wake:" + std::to_string(m_ticket);
  // BLPOP takes seconds with decimals; the poll below bounds the wait all the same.
  std::string call[] = {"BLPOP", list,
                        fmt::format("{:.3f}", static_cast<double>(sleep) / 1e9 + 0.001)};
  m_connection.send_only(call);
  // Longer than the BLPOP: its reply (nil at its timeout) normally ends the wait, and a
  // connection given up on must be made again.
  // A reply already received into a buffer (TLS decrypts whole records) is not seen by poll.
  bool readable = m_connection.reply_buffered();
  int signal = readable ? 0
                        : signals.sleep_or_readable(sleep + 250 * core::k_nanos_per_milli,
                                                    m_connection.fd(), readable);
  if (signal != 0 || !readable) {
    // The BLPOP's reply would come later on this connection: another one for what follows.
    m_connection.reconnect();
    return signal;
  }
  try {
    m_connection.read_reply(); // an element, nil at the timeout, or a redirection: look again
  } catch (const StoreError&) {
    // A failover closes the old master's connections: a wake-up lost with it only means
    // looking again now, on the master the sentinels name.
    if (!m_connection.follows_failover()) {
      throw;
    }
    m_connection.reconnect();
  }
  return 0;
}

void RedisRunSlots::leave() {
  std::vector<std::string> arguments{"leave", std::to_string(m_ticket)};
  RedisReply reply = call(std::move(arguments));
  wake(reply.size() == 2 ? element(reply, 0) : 0);
}

void RedisRunSlots::finish() {
  std::vector<std::string> arguments{"finish", std::to_string(m_ticket)};
  RedisReply reply = call(std::move(arguments));
  wake(reply.size() == 2 ? element(reply, 0) : 0);
}

void RedisRunSlots::renew() {
  std::vector<std::string> arguments{"renew", std::to_string(m_ticket),
                                     std::to_string(micros_up(m_lease))};
  call(std::move(arguments));
}

std::vector<RunEntry> RedisRunSlots::entries(RedisConnection& connection, std::string_view prefix,
                                             std::span<const std::string> keys) {
  std::vector<RunEntry> result;
  for (const std::string& key : keys) {
    std::vector<std::string> names = names_of(prefix, key);
    std::string arguments[] = {"entries", ""};
    RedisReply reply = connection.run_source(k_script, names, arguments);
    for (std::size_t i = 0; i < reply.size(); ++i) {
      const redisReply& item = reply.at(i);
      std::string value(item.str ? item.str : "", item.len);
      // "cost hold pid joined started ended host"
      long long cost = 0, hold = 0, pid = 0, joined = 0;
      char started[32] = {}, ended[32] = {};
      int consumed = 0;
      if (std::sscanf(value.c_str(), "%lld %lld %lld %lld %31s %31s %n", &cost, &hold, &pid,
                      &joined, started, ended, &consumed) < 6) {
        continue;
      }
      RunEntry entry;
      entry.key = key;
      entry.cost = cost;
      entry.pid = pid;
      entry.host = value.substr(static_cast<std::size_t>(consumed));
      entry.running = started[0] != '-';
      entry.since = (entry.running ? std::atoll(started) : joined) * k_micro;
      result.push_back(std::move(entry));
    }
  }
  return result;
}

} // namespace ratelimit::store::redis

// The differential check of run_slots.lua (see test_store_differential.cpp for the
// others): the script on an explicit clock against core::admit_run, with the script's queue
// of tickets, its leases and the rows it forgets kept beside it.
#include "differential.hpp"
#include "redis_server.hpp"
#include "store/redis/redis_run_slots.hpp"
#include "store/redis/redis_store.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <map>
#include <set>

using namespace ratelimit;
using namespace ratelimit::differential;

namespace {

// What run_slots.lua must answer, with core::admit_run deciding: the script's queue of
// tickets, its leases and the rows it forgets, kept here in microseconds as it keeps them.
class RunSlotsModel {
public:
  struct Answer {
    bool started = false;
    bool behind = false;
    core::RunAdmission admission;
    std::int64_t ticket = 0;
  };

  // The key's pause, as `pause` set it.
  core::Nanos paused_until = 0;

  Answer attempt(std::int64_t ticket, std::int64_t cost, core::Nanos hold, core::Nanos lease,
                 const std::vector<core::RunCap>& caps, core::Nanos now) {
    expire_dead(now);
    if (ticket == 0 || m_rows.count(ticket) == 0) {
      // New, or forgotten (dead) while it waited: it comes again, last.
      ticket = ++m_next == 1 ? now : m_next;
      m_next = ticket;
      m_rows[ticket] = {cost, hold, std::nullopt, std::nullopt};
      m_queue.insert(ticket);
    }
    m_leases[ticket] = now + lease;
    Answer answer;
    answer.ticket = ticket;
    if (*m_queue.begin() != ticket) {
      answer.behind = true;
      return answer;
    }
    if (paused_until > now) {
      // The caps are asked again at the pause's end: no holder is looked at before.
      answer.admission = core::admit_run({}, caps, cost, now, paused_until);
      return answer;
    }
    core::Nanos longest = 0;
    for (const core::RunCap& cap : caps) {
      longest = std::max(longest, cap.hold);
    }
    std::vector<core::RunHolder> holders;
    for (auto it = m_rows.begin(); it != m_rows.end();) {
      const Row& row = it->second;
      if (it->first != ticket && row.ended &&
          core::run_released({row.cost, *row.started, row.ended}, std::max(row.hold, longest),
                             now)) {
        it = m_rows.erase(it);
        continue;
      }
      if (it->first != ticket && row.started) {
        holders.push_back({row.cost, *row.started, row.ended});
      }
      ++it;
    }
    answer.admission = core::admit_run(holders, caps, cost, now);
    if (answer.admission.admission == core::Admission::now) {
      m_rows[ticket].started = now;
      m_queue.erase(ticket);
      answer.started = true;
    }
    return answer;
  }

  void finish(std::int64_t ticket, core::Nanos now, bool leaving) {
    expire_dead(now);
    if (auto it = m_rows.find(ticket); it != m_rows.end()) {
      if (leaving || !it->second.started || it->second.hold == 0) {
        m_rows.erase(it);
      } else {
        it->second.ended = now;
      }
    }
    m_leases.erase(ticket);
    m_queue.erase(ticket);
  }

  void renew(std::int64_t ticket, core::Nanos lease, core::Nanos now) {
    if (auto it = m_leases.find(ticket); it != m_leases.end()) {
      it->second = now + lease;
    }
  }

private:
  struct Row {
    std::int64_t cost;
    core::Nanos hold;
    std::optional<core::Nanos> started;
    std::optional<core::Nanos> ended;
  };

  // Commands whose lease ran out are dead: a waiter leaves, a holder counts as ended now.
  void expire_dead(core::Nanos now) {
    for (auto it = m_leases.begin(); it != m_leases.end();) {
      if (it->second >= now) {
        ++it;
        continue;
      }
      if (auto row = m_rows.find(it->first); row != m_rows.end()) {
        if (!row->second.started || row->second.hold == 0) {
          m_rows.erase(row);
        } else if (!row->second.ended) {
          row->second.ended = now;
        }
      }
      m_queue.erase(it->first);
      it = m_leases.erase(it);
    }
  }

  std::map<std::int64_t, Row> m_rows;
  std::map<std::int64_t, core::Nanos> m_leases;
  std::set<std::int64_t> m_queue;
  std::int64_t m_next = 0;
};

} // namespace

TEST_CASE("differential: run_slots.lua admits as core::admit_run, on an explicit clock, paused "
          "or not") {
  RATELIMIT_REDIS_SERVER(server);
  Settings settings = Settings::from_environment();
  core::Nanos clock = 0;
  store::redis::RedisStore store(server->location(), "differential:", 2 * core::k_nanos_per_second,
                                 [&clock] { return clock; });
  constexpr core::Nanos k_ms = core::k_nanos_per_milli;
  auto micros_up = [](core::Nanos d) { return core::ceil_div(d, k_micro); };
  std::uint64_t attempts = 0, started = 0, behind = 0, at = 0, on_exit = 0, dead = 0, steps = 0;
  std::uint64_t pauses = 0, held_by_pause = 0;
  std::uint64_t completed = 0;
  std::uint64_t runs = for_each_seed(settings, [&](std::uint64_t seed) {
    std::mt19937_64 random(seed);
    auto uniform = [&](std::int64_t low, std::int64_t high) {
      return std::uniform_int_distribution<std::int64_t>(low, high)(random);
    };
    std::string key = fmt::format("run slots {}", seed);
    std::vector<std::string> keys{key};
    store.reset(keys, false);
    struct Command {
      std::unique_ptr<store::RunSlots> slots;
      std::int64_t cost = 1;
      core::Nanos hold = 0;
      core::Nanos lease = 0;
      std::vector<core::RunCap> caps;
      std::int64_t ticket = 0;
      bool running = false;
      core::Nanos renewed = 0;
    };
    std::vector<Command> live;
    RunSlotsModel model;
    clock = 1'700'000'000 * core::k_nanos_per_second + uniform(0, 999'999'999);
    // Everyone on the key shares its caps most of the time, as with one command line.
    std::vector<core::RunCap> shared{{uniform(1, 3), uniform(0, 1) * uniform(1, 500) * k_ms}};
    auto compare = [&](Command& command, const store::StartAnswer& answer,
                       const RunSlotsModel::Answer& expected, const char* what) {
      ++attempts;
      core::Nanos now = core::floor_div(clock, k_micro);
      bool same = answer.started == expected.started && answer.behind == expected.behind &&
                  answer.now == now * k_micro;
      if (same && !answer.started && !answer.behind) {
        same = answer.admission.admission == expected.admission.admission &&
               answer.admission.binding == expected.admission.binding &&
               answer.admission.paused_until == expected.admission.paused_until * k_micro &&
               (answer.admission.admission != core::Admission::at ||
                answer.admission.at == expected.admission.at * k_micro);
      }
      if (!same) {
        FAIL_CHECK(fmt::format(
            "run_slots.lua and core::admit_run differ, seed {}, step {}: {} of cost {} under {} "
            "cap(s), first {} per {}, at {}:\n  core:   started {}, behind {}, admission {} at "
            "{} (cap {})\n  script: started {}, behind {}, admission {} at {} (cap {}), now {}",
            seed, steps, what, command.cost, command.caps.size(), command.caps[0].count,
            seconds(command.caps[0].hold), clock, expected.started, expected.behind,
            static_cast<int>(expected.admission.admission), expected.admission.at * k_micro,
            expected.admission.binding, answer.started, answer.behind,
            static_cast<int>(answer.admission.admission), answer.admission.at,
            answer.admission.binding, answer.now));
        return false;
      }
      command.ticket = expected.ticket;
      command.running = answer.started;
      started += answer.started;
      behind += answer.behind;
      at += !answer.started && !answer.behind && answer.admission.admission == core::Admission::at;
      held_by_pause += answer.admission.paused_until != 0;
      on_exit += !answer.started && !answer.behind &&
                 answer.admission.admission == core::Admission::on_exit;
      return true;
    };
    for (int step = 0; step < settings.length; ++step) {
      ++steps;
      int advance = static_cast<int>(uniform(0, 9));
      clock += advance < 3   ? 0
               : advance < 8 ? uniform(0, 200) * k_ms + uniform(0, 999'999)
                             : uniform(300, 1500) * k_ms;
      core::Nanos now = core::floor_div(clock, k_micro);
      int op = static_cast<int>(uniform(0, 99));
      std::vector<std::size_t> waiting, running;
      for (std::size_t i = 0; i < live.size(); ++i) {
        (live[i].running ? running : waiting).push_back(i);
      }
      if (op < 25 && live.size() < 6) {
        Command command;
        command.caps =
            uniform(0, 3) == 0
                ? std::vector<core::RunCap>{{uniform(1, 3), uniform(0, 1) * uniform(1, 500) * k_ms}}
                : shared;
        if (uniform(0, 3) == 0) {
          command.caps.push_back({uniform(2, 5), uniform(200, 900) * k_ms});
        }
        command.cost = 1;
        for (const core::RunCap& cap : command.caps) {
          command.hold = std::max(command.hold, cap.hold);
        }
        command.cost = uniform(1, command.caps[0].count);
        for (const core::RunCap& cap : command.caps) {
          command.cost = std::min(command.cost, cap.count);
        }
        command.lease = uniform(300, 1000) * k_ms;
        command.slots = store.run_slots(command.lease);
        std::vector<core::RunCap> caps_us = command.caps;
        for (core::RunCap& cap : caps_us) {
          cap.hold = micros_up(cap.hold);
        }
        store::StartAnswer answer =
            command.slots->join(key, command.cost, command.hold, command.caps);
        RunSlotsModel::Answer expected = model.attempt(0, command.cost, micros_up(command.hold),
                                                       micros_up(command.lease), caps_us, now);
        if (!compare(command, answer, expected, "join")) {
          return false;
        }
        live.push_back(std::move(command));
      } else if (op < 55 && !waiting.empty()) {
        Command& command = live[waiting[static_cast<std::size_t>(uniform(0, waiting.size() - 1))]];
        std::vector<core::RunCap> caps_us = command.caps;
        for (core::RunCap& cap : caps_us) {
          cap.hold = micros_up(cap.hold);
        }
        store::StartAnswer answer = command.slots->try_start(command.caps);
        RunSlotsModel::Answer expected =
            model.attempt(command.ticket, command.cost, micros_up(command.hold),
                          micros_up(command.lease), caps_us, now);
        if (!compare(command, answer, expected, "try_start")) {
          return false;
        }
      } else if (op < 70 && !running.empty()) {
        std::size_t index = running[static_cast<std::size_t>(uniform(0, running.size() - 1))];
        live[index].slots->finish();
        model.finish(live[index].ticket, now, false);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
      } else if (op < 78 && !waiting.empty()) {
        std::size_t index = waiting[static_cast<std::size_t>(uniform(0, waiting.size() - 1))];
        live[index].slots->leave();
        model.finish(live[index].ticket, now, true);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
      } else if (op < 90 && !live.empty()) {
        Command& command = live[static_cast<std::size_t>(uniform(0, live.size() - 1))];
        command.slots->renew();
        model.renew(command.ticket, micros_up(command.lease), now);
      } else if (op >= 90 && op < 94) {
        // A pause of the key (`ratelimit pause`, a server's answer): no start before its end.
        store::PauseStanding standing = store.pause(key, uniform(0, 800) * k_ms + uniform(0, 999));
        model.paused_until = standing.paused_until / k_micro;
        ++pauses;
      } else if (op >= 94 && !live.empty() && uniform(0, 2) == 0) {
        // A command that dies: it renews no more, and nobody hears from it again.
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(uniform(0, live.size() - 1)));
        ++dead;
      }
    }
    store.reset(keys, false);
    ++completed;
    return true;
  });
  MESSAGE(fmt::format("run slots, seeds {} to {}: {} runs, {} steps, {} attempts: {} started, {} "
                      "behind a waiter, {} to start at a release or a pause's end ({} held by "
                      "one of {} pauses), {} on a holder's exit; {} commands died",
                      settings.first_seed, settings.first_seed + runs - 1, completed, steps,
                      attempts, started, behind, at, held_by_pause, pauses, on_exit, dead));
  CHECK(completed == runs);
}

#pragma once

#include "core/time.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace ratelimit::core {

// Run slots: commands that hold a key from their start until their exit, or until a
// period after it (`run -j N`, `run --until-exit`).
//
// A window [w, w + P) overlaps a run [s, e] iff s < w + P and e >= w, so no P-long window
// overlaps runs weighing more than N iff at every instant x the runs with s <= x < e + P
// weigh at most N: a run holds one of N slots from its start until P after its exit. A
// concurrency cap is the same with P = 0, and a plain grant at t is the run [t, t].

// One command's claim on a key: from `started` until `ended` plus a cap's hold, or while it
// runs (`ended` empty).
struct RunHolder {
  std::int64_t cost = 1;
  Nanos started = 0;
  std::optional<Nanos> ended;
};

// At most `count` cost-weighted holders at any instant, each holding its slot from its start
// until `hold` after its exit: a run rate of `count` per `hold` (--until-exit -r N/P), or a
// concurrency cap (-j N, `hold` 0).
struct RunCap {
  std::int64_t count = 1;
  Nanos hold = 0;
};

enum class Admission {
  now,     // the caps allow the command to start now
  at,      // not before `at`, when holders that have exited release enough slots
  on_exit, // not before a running holder exits: when, nobody knows
};

struct RunAdmission {
  Admission admission = Admission::now;
  // With `at`: the earliest time the caps allow the start, if no holder changes meanwhile.
  Nanos at = 0;
  // The cap that decided, an index into the caps (for a refusal's message).
  std::size_t binding = 0;
  // The end of the key's pause, when the pause decided (`at` is then its end); else 0.
  Nanos paused_until = 0;
};

// Whether a command of `cost` may start at `now` among `holders` under every cap of `caps`,
// on a key paused until `paused_until` (0: not paused). Pure. A pause running at `now`
// admits nothing before its end, as for every other grant on the key; holders whose slots
// are released by `now` count for nothing; a cost above a cap's count is never admitted
// (`on_exit` for ever: callers check costs first).
RunAdmission admit_run(std::span<const RunHolder> holders, std::span<const RunCap> caps,
                       std::int64_t cost, Nanos now, Nanos paused_until = 0);

// Whether `holder` holds nothing at `now` under any cap whose hold is at most `longest_hold`:
// it may be forgotten.
bool run_released(const RunHolder& holder, Nanos longest_hold, Nanos now);

// The weight that `holders` hold at `now` under `cap` (running or within `hold` of exit).
std::int64_t run_weight(std::span<const RunHolder> holders, const RunCap& cap, Nanos now);

} // namespace ratelimit::core

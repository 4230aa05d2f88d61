// Writes the prelude of the Redis scripts (prelude.lua, which every Lua part reads): the
// algorithm table of src/core/algorithm.cpp and the constants the scripts share with the
// C++ code, so that no Lua file copies them. Built and run at build time (see
// CMakeLists.txt): `lua_prelude OUTPUT`.
#include "core/adaptive_rate.hpp"
#include "core/algorithm.hpp"
#include "core/bounds.hpp"
#include "core/decide.hpp"
#include "core/rate.hpp"
#include "core/rules.hpp"
#include "core/server_budget.hpp"
#include "store/redis/redis_run_slots.hpp"
#include "store/store.hpp"

#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>

namespace {

using namespace ratelimit;

constexpr core::Nanos k_micro = core::k_nanos_per_micro;
constexpr core::Nanos k_milli = core::k_nanos_per_milli;

std::string lua_bool(bool value) {
  return value ? "true" : "false";
}

// The key of an algorithm's rules in rules.lua: its C++ enumerator (`token_bucket`).
std::string rules_key(std::string_view name) {
  std::string key(name);
  for (char& c : key) {
    c = c == '-' ? '_' : c;
  }
  return key;
}

std::string prelude() {
  std::string text = "-- Generated at build time by lua_prelude "
                     "(src/store/redis/lua/lua_prelude.cpp) from the C++\n"
                     "-- algorithm table and constants; do not edit. Times are in microseconds.\n";
  auto constant = [&](std::string_view name, std::int64_t value, std::string_view source) {
    text += fmt::format("local {} = {} -- {}\n", name, value, source);
  };
  constant("k_micros_per_second", core::k_nanos_per_second / k_micro, "core::k_nanos_per_second");
  constant("k_micros_per_milli", k_milli / k_micro, "core::k_nanos_per_milli");
  constant("k_nanos_per_micro", k_micro, "core::k_nanos_per_micro");
  constant("k_exact", std::int64_t{1} << std::numeric_limits<double>::digits,
           "2^53: a double holds every integer below it");
  constant("k_max_time", core::k_max_time / k_micro, "core::k_max_time");
  constant("k_min_time", core::k_min_time / k_micro, "core::k_min_time");
  constant("k_max_total", core::k_max_total, "core::k_max_total");
  constant("k_max_window_count", core::k_max_window_count, "core::k_max_window_count");
  constant("k_max_count", core::k_max_count, "core::k_max_count");
  constant("k_max_duration", core::k_max_duration / k_micro, "core::k_max_duration");
  constant("k_far", core::k_rescale_saturation / k_micro, "core::k_rescale_saturation");
  constant("k_max_remembered", static_cast<std::int64_t>(core::k_max_remembered),
           "core::k_max_remembered");
  constant("k_max_budget_entries", static_cast<std::int64_t>(core::k_max_budget_entries),
           "core::k_max_budget_entries");
  constant("k_max_awaited_answers", static_cast<std::int64_t>(core::k_max_awaited_answers),
           "core::k_max_awaited_answers");
  constant("k_max_grant_seq", core::k_max_grant_seq, "core::k_max_grant_seq");
  constant("k_max_ceiling", core::k_max_ceiling, "core::k_max_ceiling");
  constant("k_stale_fraction", core::k_stale_fraction, "core::k_stale_fraction");
  constant("k_probe_wait_fraction", core::k_probe_wait_fraction, "core::k_probe_wait_fraction");
  // The adaptive rate's law (core/adaptive_rate.hpp): rates in micro-requests per second,
  // durations in microseconds.
  constant("k_max_adaptive_rate", core::k_max_adaptive_rate, "core::k_max_adaptive_rate");
  constant("k_rate_scale_micros", core::k_rate_scale_micros, "core::k_rate_scale_micros");
  constant("k_success_unit", core::k_success_unit, "core::k_success_unit");
  constant("k_max_successes", core::k_max_successes, "core::k_max_successes");
  constant("k_max_interval", core::k_max_interval / k_micro, "core::k_max_interval");
  constant("k_cut_numerator", core::k_cut_numerator, "core::k_cut_numerator");
  constant("k_cut_denominator", core::k_cut_denominator, "core::k_cut_denominator");
  constant("k_floor_divisor", core::k_floor_divisor, "core::k_floor_divisor");
  constant("k_least_floor", core::k_least_floor, "core::k_least_floor");
  constant("k_least_round", core::k_least_round / k_micro, "core::k_least_round");
  constant("k_round_grants", core::k_round_grants, "core::k_round_grants");
  constant("k_least_recovery", core::k_least_recovery / k_micro, "core::k_least_recovery");
  constant("k_recovery_grants", core::k_recovery_grants, "core::k_recovery_grants");
  constant("k_fraction_bits", core::k_fraction_bits, "core::k_fraction_bits");
  constant("k_max_fraction", core::k_max_fraction, "core::k_max_fraction");
  constant("k_windows_kept", core::k_windows_kept, "core::k_windows_kept");
  constant("k_windows_before_folding", core::k_windows_before_folding,
           "core::k_windows_before_folding");
  constant("k_longest_measure", core::k_longest_measure / k_micro, "core::k_longest_measure");
  constant("k_counter_retention_ms", store::k_counter_retention / k_milli,
           "store::k_counter_retention");
  constant("k_run_slots_linger_ms", store::redis::k_run_slots_linger / k_milli,
           "store::redis::k_run_slots_linger");
  text += "-- core::Refusal\nlocal k_refusal = {";
  const char* refusals[] = {"none", "later", "timeout", "full", "too_far"};
  for (core::Refusal refusal : {core::Refusal::none, core::Refusal::later, core::Refusal::timeout,
                                core::Refusal::full, core::Refusal::too_far}) {
    text += fmt::format("{}{} = {}", refusal == core::Refusal::none ? "" : ", ",
                        refusals[static_cast<int>(refusal)], static_cast<int>(refusal));
  }
  text += "}\n";
  text += "-- core::AlgorithmInfo of each algorithm, in order, with what its Rules say of it;\n"
          "-- `rules_key` names its rules in rules.lua.\nlocal k_algorithm_table = {\n";
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    const core::AlgorithmInfo& info = core::info(algorithm);
    const core::Rules& rules = info.rules();
    std::string slots;
    for (core::SlotKind kind : info.slots) {
      slots += fmt::format("{}'{}'", slots.empty() ? "" : ", ",
                           kind == core::SlotKind::time ? "time" : "cost");
    }
    text += fmt::format(
        "  {{name = '{}', rules_key = '{}', takes_burst = {}, cost_up_to_burst = {}, "
        "keeps_log = {}, shares_state = {}, remembers_unnamed = {}, counts_granted = {}, "
        "slots = {{{}}}}},\n",
        info.name, rules_key(info.name), lua_bool(info.takes_burst),
        lua_bool(info.cost_up_to_burst), lua_bool(info.keeps_log), lua_bool(rules.shares_state()),
        lua_bool(rules.remembers_unnamed()), lua_bool(rules.counts_granted()), slots);
  }
  text += "}\n";
  return text;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: lua_prelude OUTPUT\n";
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << prelude();
  out.close();
  if (!out) {
    std::cerr << "lua_prelude: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}

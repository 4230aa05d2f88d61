#pragma once

#include "sim/adaptive_replay.hpp"
#include "sim/simulate.hpp"

#include <optional>
#include <span>
#include <string>

namespace ratelimit::cli {

// A finished simulation, ready to print.
struct SimulationReport {
  // What was simulated, for the table's first line: `trace "t.txt"`, `poisson profile`.
  std::string source;
  std::span<const sim::Arrival> arrivals;
  // The time the arrivals cover: a profile's duration, a trace's last arrival.
  core::Nanos span = 0;
  const sim::Settings* settings = nullptr;
  const sim::Comparison* comparison = nullptr;
  // Without -a: the algorithm try, wait, run and pipe would use with the same options.
  std::optional<core::Algorithm> default_algorithm;
};

enum class SimulateFormat { table, csv, json };

// Prints `report` on standard output as aligned rows with sparklines and a recommendation line; as
// CSV, one row per arrival per algorithm; or as a JSON array of one object per algorithm.
void print_simulation(SimulateFormat format, const SimulationReport& report);

// Prints an adaptive replay: the rate over time with the answers per bucket, the count of
// 429 answers, the duration against the least the server allows, and how soon the rate
// followed each raise of the server's limit; as a table, CSV rows (one per bucket) or one
// JSON object.
void print_adaptive_replay(SimulateFormat format, const sim::AdaptiveSpec& spec,
                           const sim::AdaptiveReplay& replay);

} // namespace ratelimit::cli

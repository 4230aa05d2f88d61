#pragma once

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

} // namespace ratelimit::cli

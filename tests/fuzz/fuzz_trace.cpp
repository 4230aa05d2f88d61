// sim::parse_trace, the reader of `simulate --trace`, on any text: it never crashes, and a
// trace it accepts is non-empty, in time order, within 10 years, with costs of at least 1,
// and its arrivals format back to a trace that parses to the same arrivals.
#include "core/rate.hpp"
#include "fuzz_check.hpp"
#include "sim/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <string>

using namespace ratelimit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto trace = sim::parse_trace(text);
  if (!trace) {
    fuzz::check(!trace.error().empty(), "a refusal says why", text);
    return 0;
  }
  const auto& arrivals = trace->arrivals;
  fuzz::check(!arrivals.empty(), "an accepted trace has arrivals", text);
  std::int64_t max_cost = 0;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    fuzz::check(arrivals[i].at >= 0 && arrivals[i].at <= core::k_max_duration,
                "times within 10 years", text);
    fuzz::check(arrivals[i].cost >= 1, "costs of at least 1", text);
    fuzz::check(i == 0 || arrivals[i - 1].at <= arrivals[i].at, "arrivals in time order", text);
    max_cost = std::max(max_cost, arrivals[i].cost);
  }
  fuzz::check(trace->max_cost == max_cost && trace->max_cost_line >= 1, "the largest cost named",
              text);
  std::string again;
  for (const sim::Arrival& arrival : arrivals) {
    again += fmt::format("{}.{:09} {}\n", arrival.at / core::k_nanos_per_second,
                         arrival.at % core::k_nanos_per_second, arrival.cost);
  }
  auto reparsed = sim::parse_trace(again);
  fuzz::check(reparsed.ok() && reparsed->arrivals == arrivals,
              "the arrivals, written as a trace, parse back the same", text);
  return 0;
}

// sim::parse_seconds, a trace's time column, on any text: it never crashes, what it accepts
// is within 10 years, and the exact decimal of a parsed time parses back to it.
#include "core/rate.hpp"
#include "fuzz_check.hpp"
#include "sim/trace.hpp"

#include <cstdint>
#include <fmt/format.h>

using namespace ratelimit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto seconds = sim::parse_seconds(text);
  if (!seconds) {
    fuzz::check(!seconds.error().empty(), "a refusal says why", text);
    return 0;
  }
  fuzz::check(*seconds >= 0 && *seconds <= core::k_max_duration, "within 10 years", text);
  std::string exact = fmt::format("{}.{:09}", *seconds / core::k_nanos_per_second,
                                  *seconds % core::k_nanos_per_second);
  auto again = sim::parse_seconds(exact);
  fuzz::check(again.ok() && *again == *seconds, "the exact decimal parses back", text);
  return 0;
}

// core::parse_rate on any text: it never crashes, what it accepts is in range, and a parsed
// rate formats to text that parses back to the same rate.
#include "core/rate.hpp"
#include "fuzz_check.hpp"

#include <cstdint>

using namespace ratelimit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto rate = core::parse_rate(text);
  if (!rate) {
    fuzz::check(!rate.error().empty(), "a refusal says why", text);
    return 0;
  }
  fuzz::check(rate->count >= 1 && rate->count <= core::k_max_count, "count in range", text);
  fuzz::check(rate->period >= rate->count && rate->period <= core::k_max_duration,
              "period in range, at most one request per nanosecond", text);
  fuzz::check(rate->emission_interval() >= 1, "emission interval at least 1 ns", text);
  std::string formatted = core::format_rate(*rate);
  auto again = core::parse_rate(formatted);
  fuzz::check(again.ok(), "format_rate gives text that parses", text);
  fuzz::check(*again == *rate, "format_rate names the rate exactly", text);
  return 0;
}

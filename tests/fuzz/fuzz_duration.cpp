// core::parse_duration on any text: it never crashes, what it accepts is in range, a bare
// number means seconds, and a duration with a unit is the period parse_rate reads.
#include "core/rate.hpp"
#include "fuzz_check.hpp"

#include <cstdint>
#include <string>

using namespace ratelimit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto duration = core::parse_duration(text);
  if (!duration) {
    fuzz::check(!duration.error().empty(), "a refusal says why", text);
    return 0;
  }
  fuzz::check(*duration >= 0 && *duration <= core::k_max_duration, "duration in range", text);
  char last = text.back(); // a duration has at least one digit
  bool bare_number = (last >= '0' && last <= '9') || last == '.';
  if (bare_number) {
    auto seconds = core::parse_duration(std::string(text) + "s");
    fuzz::check(seconds.ok() && *seconds == *duration, "a bare number is seconds", text);
    auto millis = core::parse_duration(std::string(text) + "ms");
    fuzz::check(millis.ok() && *millis <= *duration, "milliseconds are shorter", text);
  } else if (*duration > 0) {
    auto rate = core::parse_rate("1/" + std::string(text));
    fuzz::check(rate.ok() && rate->period == *duration, "the same period in a rate", text);
  }
  return 0;
}

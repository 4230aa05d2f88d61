// core::parse_algorithm on any text: it accepts exactly the five names, and a refusal names
// the accepted ones.
#include "core/algorithm.hpp"
#include "fuzz_check.hpp"

#include <cstdint>
#include <string>

using namespace ratelimit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto algorithm = core::parse_algorithm(text);
  if (algorithm) {
    fuzz::check(core::algorithm_name(*algorithm) == text, "only an exact name is accepted", text);
    return 0;
  }
  fuzz::check(algorithm.error().find("expected one of token-bucket") != std::string::npos,
              "a refusal names the accepted names", text);
  // The message quotes at most 64 bytes of the input, whatever its length.
  fuzz::check(algorithm.error().size() < 400, "the message stays short", text);
  return 0;
}

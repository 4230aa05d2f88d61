// cli::parse_config on any bytes: it never crashes, an error is one line that starts with
// the file's name and a line number (`FILE:LINE: `), and what it accepts has a rate.
#include "cli/config_file.hpp"
#include "fuzz_check.hpp"

#include <cstdint>

using namespace ratelimit;

namespace {

bool starts_with_file_and_line(const std::string& message) {
  const std::string prefix = "limits.toml:";
  if (!message.starts_with(prefix)) {
    return false;
  }
  std::size_t i = prefix.size();
  std::size_t digits = 0;
  while (i < message.size() && message[i] >= '0' && message[i] <= '9') {
    ++i;
    ++digits;
  }
  return digits > 0 && message.compare(i, 2, ": ") == 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto config = cli::parse_config(text, "limits.toml");
  if (!config) {
    fuzz::check(starts_with_file_and_line(config.error()),
                "an error starts with FILE:LINE: ", text);
    fuzz::check(config.error().find('\n') == std::string::npos, "an error is one line", text);
    return 0;
  }
  for (const auto& [name, limit] : config->limits) {
    fuzz::check(!limit.rates.empty(), "a named limit has a rate", text);
    fuzz::check(limit.bursts.empty() || limit.bursts.size() == 1 ||
                    limit.bursts.size() == limit.rates.size(),
                "one burst, or one per rate", text);
  }
  return 0;
}

#pragma once

// Shared by the fuzz targets: a failed property prints what broke and aborts, which both
// libFuzzer and the corpus replay report as a crash, with the input saved.

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ratelimit::fuzz {

inline void check(bool condition, const char* property, std::string_view input) {
  if (condition) {
    return;
  }
  std::fprintf(stderr, "property broken: %s\ninput (%zu bytes): \"%.*s\"\n", property, input.size(),
               static_cast<int>(input.size() > 200 ? 200 : input.size()), input.data());
  std::abort();
}

inline std::string_view as_text(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace ratelimit::fuzz

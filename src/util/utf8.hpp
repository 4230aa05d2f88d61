#pragma once

#include <cstddef>
#include <string_view>

namespace ratelimit::util {

// The character at the front of a text: its code point and the bytes it takes, or a length
// of 0 when those bytes are not UTF-8 (a stray byte, an overlong form, a surrogate, past
// U+10FFFF or cut short).
struct Utf8Char {
  char32_t code_point = 0;
  std::size_t length = 0;
};
Utf8Char decode_utf8(std::string_view text);

// The columns a terminal gives `text`: East Asian wide characters and emoji take two,
// combining marks and zero-width characters none. `text` holds no control characters.
std::size_t display_width(std::string_view text);

} // namespace ratelimit::util

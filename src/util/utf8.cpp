#include "util/utf8.hpp"

#include <clocale>
#include <cwchar>
#include <locale.h>

namespace ratelimit::util {

Utf8Char decode_utf8(std::string_view text) {
  if (text.empty()) {
    return {};
  }
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) {
    return {lead, 1};
  }
  std::size_t length = lead >= 0xc2 && lead <= 0xdf   ? 2
                       : lead >= 0xe0 && lead <= 0xef ? 3
                       : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                      : 0;
  if (length == 0 || length > text.size()) {
    return {};
  }
  // Overlong forms, surrogates and code points past U+10FFFF.
  if ((lead == 0xe0 && byte(1) < 0xa0) || (lead == 0xed && byte(1) > 0x9f) ||
      (lead == 0xf0 && byte(1) < 0x90) || (lead == 0xf4 && byte(1) > 0x8f)) {
    return {};
  }
  char32_t code_point = lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) {
      return {};
    }
    code_point = (code_point << 6) | (byte(i) & 0x3f);
  }
  return {code_point, length};
}

std::size_t display_width(std::string_view text) {
  // wcwidth() knows the Unicode widths in a UTF-8 locale only. C.UTF-8 ships with glibc
  // whatever the user's locale; without it, a character counts as one column.
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t{});
  locale_t previous = utf8 != locale_t{} ? uselocale(utf8) : locale_t{};
  std::size_t width = 0;
  while (!text.empty()) {
    Utf8Char c = decode_utf8(text);
    std::size_t length = c.length == 0 ? 1 : c.length;
    int columns =
        utf8 != locale_t{} && c.length != 0 ? wcwidth(static_cast<wchar_t>(c.code_point)) : 1;
    width += columns < 0 ? 1 : static_cast<std::size_t>(columns);
    text.remove_prefix(length);
  }
  if (previous != locale_t{}) {
    uselocale(previous);
  }
  return width;
}

} // namespace ratelimit::util

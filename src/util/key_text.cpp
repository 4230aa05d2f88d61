#include "util/key_text.hpp"

#include "util/utf8.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ratelimit::util {

namespace {

// Characters that would let a key draw on the terminal or reorder the text around it: C1
// controls (0x9b alone starts an escape sequence on some terminals) and the bidirectional
// controls.
bool controls_the_display(char32_t c) {
  return (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

} // namespace

std::string printable_key(std::string_view key) {
  std::string out = "\"";
  while (!key.empty()) {
    Utf8Char c = decode_utf8(key);
    if (c.length == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(key.front()));
      key.remove_prefix(1);
      continue;
    }
    if (c.code_point == '"' || c.code_point == '\\') {
      out += '\\';
      out += static_cast<char>(c.code_point);
    } else if (c.code_point == '\n') {
      out += "\\n";
    } else if (c.code_point == '\t') {
      out += "\\t";
    } else if (c.code_point < 0x20 || c.code_point == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c.code_point));
    } else if (controls_the_display(c.code_point)) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c.code_point));
    } else {
      out.append(key.substr(0, c.length));
    }
    key.remove_prefix(c.length);
  }
  return out + "\"";
}

std::string shell_word_for_key(std::string_view key) {
  std::string prefix = !key.empty() && key.front() == '-' ? "-- " : "";
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-.,:/@%+=").find(c) != std::string_view::npos;
  };
  if (!key.empty() && std::all_of(key.begin(), key.end(), plain)) {
    return prefix + std::string(key);
  }
  // printable_key escapes as $'...' reads escapes (\n, \xff, \u202e, \", \\): when it
  // escaped nothing, single quotes keep every character as it is.
  std::string printable = printable_key(key);
  std::string_view inner = std::string_view(printable).substr(1, printable.size() - 2);
  if (inner == key) {
    std::string quoted = "'";
    for (char c : key) {
      quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return prefix + quoted + "'";
  }
  std::string quoted = "$'";
  for (char c : inner) {
    quoted += c == '\'' ? std::string("\\'") : std::string(1, c);
  }
  return prefix + quoted + "'";
}

} // namespace ratelimit::util

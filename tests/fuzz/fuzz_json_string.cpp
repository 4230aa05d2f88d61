// util::json_string on any bytes: the result is one JSON string literal of valid UTF-8 with
// no raw control character, and it decodes back to the input when the input is valid UTF-8
// (otherwise to the input with each bad byte replaced by U+FFFD).
#include "fuzz_check.hpp"
#include "util/json.hpp"

#include <cstdint>
#include <optional>
#include <string>

using namespace ratelimit;

namespace {

// An independent UTF-8 reader: the code point at the front of `text` and its length, or
// nothing when the front is not a valid, shortest-form sequence of a scalar value.
std::optional<std::pair<std::uint32_t, std::size_t>> read_code_point(std::string_view text) {
  auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  std::uint8_t lead = byte(0);
  std::size_t length = 0;
  std::uint32_t value = 0;
  if (lead < 0x80) {
    return std::pair<std::uint32_t, std::size_t>{lead, 1};
  }
  if ((lead & 0xe0) == 0xc0) {
    length = 2;
    value = lead & 0x1f;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3;
    value = lead & 0x0f;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4;
    value = lead & 0x07;
  } else {
    return std::nullopt;
  }
  if (text.size() < length) {
    return std::nullopt;
  }
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) {
      return std::nullopt;
    }
    value = (value << 6) | (byte(i) & 0x3f);
  }
  static constexpr std::uint32_t k_smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < k_smallest[length] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) {
    return std::nullopt;
  }
  return std::pair<std::uint32_t, std::size_t>{value, length};
}

void append_utf8(std::string& out, std::uint32_t value) {
  if (value < 0x80) {
    out.push_back(static_cast<char>(value));
  } else if (value < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (value >> 6)));
    out.push_back(static_cast<char>(0x80 | (value & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xe0 | (value >> 12)));
    out.push_back(static_cast<char>(0x80 | ((value >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (value & 0x3f)));
  }
}

// Decodes a JSON string literal that holds only the escapes JSON allows; nothing if invalid.
std::optional<std::string> decode_json_string(std::string_view literal) {
  if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') {
    return std::nullopt;
  }
  std::string_view body = literal.substr(1, literal.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < body.size(); ++i) {
    auto c = static_cast<std::uint8_t>(body[i]);
    if (c < 0x20 || c == '"') {
      return std::nullopt;
    }
    if (c != '\\') {
      out.push_back(static_cast<char>(c));
      continue;
    }
    if (++i == body.size()) {
      return std::nullopt;
    }
    switch (body[i]) {
    case '"':
    case '\\':
    case '/':
      out.push_back(body[i]);
      break;
    case 'b':
      out.push_back('\b');
      break;
    case 'f':
      out.push_back('\f');
      break;
    case 'n':
      out.push_back('\n');
      break;
    case 'r':
      out.push_back('\r');
      break;
    case 't':
      out.push_back('\t');
      break;
    case 'u': {
      if (body.size() - i <= 4) {
        return std::nullopt;
      }
      std::uint32_t value = 0;
      for (std::size_t k = 1; k <= 4; ++k) {
        char h = body[i + k];
        value <<= 4;
        if (h >= '0' && h <= '9') {
          value |= static_cast<std::uint32_t>(h - '0');
        } else if (h >= 'a' && h <= 'f') {
          value |= static_cast<std::uint32_t>(h - 'a' + 10);
        } else if (h >= 'A' && h <= 'F') {
          value |= static_cast<std::uint32_t>(h - 'A' + 10);
        } else {
          return std::nullopt;
        }
      }
      if (value >= 0xd800 && value <= 0xdfff) {
        return std::nullopt; // json_string never needs surrogate pairs
      }
      append_utf8(out, value);
      i += 4;
      break;
    }
    default:
      return std::nullopt;
    }
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input = fuzz::as_text(data, size);
  std::string literal = util::json_string(input);
  std::string expected;
  for (std::string_view rest = input; !rest.empty();) {
    if (auto point = read_code_point(rest)) {
      expected.append(rest.substr(0, point->second));
      rest.remove_prefix(point->second);
    } else {
      expected.append("\xef\xbf\xbd");
      rest.remove_prefix(1);
    }
  }
  for (std::string_view rest = literal; !rest.empty();) {
    auto point = read_code_point(rest);
    fuzz::check(point.has_value(), "the literal is valid UTF-8", input);
    rest.remove_prefix(point->second);
  }
  auto decoded = decode_json_string(literal);
  fuzz::check(decoded.has_value(), "the literal is one valid JSON string", input);
  fuzz::check(*decoded == expected, "the literal decodes to the input", input);
  return 0;
}

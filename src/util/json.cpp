#include "util/json.hpp"

#include <fmt/format.h>

namespace ratelimit::util {

namespace {

// The length of the valid UTF-8 sequence at the front of `text`, or 0.
std::size_t utf8_sequence_length(std::string_view text) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  std::size_t length = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2
                                     : lead >= 0xe0 && lead <= 0xef   ? 3
                                     : lead >= 0xf0 && lead <= 0xf4   ? 4
                                                                      : 0;
  if (length == 0 || length > text.size()) {
    return 0;
  }
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) {
      return 0;
    }
  }
  // Overlong forms, surrogates and code points past U+10FFFF.
  if ((lead == 0xe0 && byte(1) < 0xa0) || (lead == 0xed && byte(1) > 0x9f) ||
      (lead == 0xf0 && byte(1) < 0x90) || (lead == 0xf4 && byte(1) > 0x8f)) {
    return 0;
  }
  return length;
}

} // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  while (!text.empty()) {
    unsigned char c = static_cast<unsigned char>(text.front());
    std::size_t length = utf8_sequence_length(text);
    if (length == 0) {
      out += "\\ufffd";
      text.remove_prefix(1);
      continue;
    }
    if (length == 1) {
      switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
      }
    } else {
      out.append(text.substr(0, length));
    }
    text.remove_prefix(length);
  }
  out += "\"";
  return out;
}

void JsonObject::name(std::string_view name) {
  if (m_text.size() > 1) {
    m_text += ",";
  }
  m_text += json_string(name);
  m_text += ":";
}

JsonObject& JsonObject::field(std::string_view field_name, std::string_view value) {
  name(field_name);
  m_text += json_string(value);
  return *this;
}

JsonObject& JsonObject::field(std::string_view field_name, std::int64_t value) {
  name(field_name);
  m_text += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::field(std::string_view field_name, bool value) {
  name(field_name);
  m_text += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::raw_field(std::string_view field_name, std::string_view raw) {
  name(field_name);
  m_text += raw;
  return *this;
}

} // namespace ratelimit::util

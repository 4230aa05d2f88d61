#include "util/json.hpp"

#include "util/utf8.hpp"

#include <fmt/format.h>

namespace ratelimit::util {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  while (!text.empty()) {
    unsigned char c = static_cast<unsigned char>(text.front());
    std::size_t length = decode_utf8(text).length;
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

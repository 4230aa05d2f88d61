#include "util/prometheus_text.hpp"

#include "util/utf8.hpp"

namespace ratelimit::util {

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  m_text += "# HELP ";
  m_text += name;
  m_text += ' ';
  m_text += prometheus_help_text(help);
  m_text += "\n# TYPE ";
  m_text += name;
  m_text += ' ';
  m_text += type;
  m_text += '\n';
}

void PrometheusText::sample(std::string_view name, std::span<const Label> labels,
                            std::string_view value) {
  m_text += name;
  if (!labels.empty()) {
    m_text += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) {
        m_text += ',';
      }
      m_text += labels[i].name;
      m_text += '=';
      m_text += prometheus_label_value(labels[i].value);
    }
    m_text += '}';
  }
  m_text += ' ';
  m_text += value;
  m_text += '\n';
}

std::string prometheus_label_value(std::string_view value) {
  std::string out = "\"";
  out.reserve(value.size() + 2);
  while (!value.empty()) {
    std::size_t length = decode_utf8(value).length;
    if (length == 0) {
      out += "\xef\xbf\xbd"; // U+FFFD
      value.remove_prefix(1);
      continue;
    }
    switch (value.front()) {
    case '\\':
      out += "\\\\";
      break;
    case '"':
      out += "\\\"";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      out += value.substr(0, length);
    }
    value.remove_prefix(length);
  }
  return out + "\"";
}

std::string prometheus_help_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

bool is_utf8(std::string_view text) {
  while (!text.empty()) {
    std::size_t length = decode_utf8(text).length;
    if (length == 0) {
      return false;
    }
    text.remove_prefix(length);
  }
  return true;
}

std::string hex_bytes(std::string_view bytes) {
  constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto byte = static_cast<unsigned char>(c);
    out += k_digits[byte >> 4];
    out += k_digits[byte & 0xf];
  }
  return out;
}

} // namespace ratelimit::util

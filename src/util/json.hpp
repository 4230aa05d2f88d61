#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ratelimit::util {

// `text` as a JSON string literal, quotes included. Bytes that are not UTF-8 become U+FFFD:
// JSON can only carry Unicode.
std::string json_string(std::string_view text);

// Builds one JSON object, fields in the order added.
class JsonObject {
public:
  JsonObject& field(std::string_view name, std::string_view value);
  JsonObject& field(std::string_view name, const char* value) {
    return field(name, std::string_view(value));
  }
  JsonObject& field(std::string_view name, std::int64_t value);
  JsonObject& field(std::string_view name, bool value);
  // `raw` is already JSON (a number with decimals, an array, an object, null).
  JsonObject& raw_field(std::string_view name, std::string_view raw);
  std::string str() const { return m_text + "}"; }

private:
  void name(std::string_view name);
  std::string m_text = "{";
};

} // namespace ratelimit::util

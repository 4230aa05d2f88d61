#include "util/http_head.hpp"

#include <cctype>

namespace ratelimit::util {

namespace {

bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_ows(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && is_ows(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

// RFC 9110's tchar: what a field name is made of.
bool is_tchar(char c) {
  static constexpr std::string_view k_marks = "!#$%&'*+-.^_`|~";
  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
         k_marks.find(c) != std::string_view::npos;
}

// The status code of a status line, `HTTP/1.1 200 OK`, `HTTP/2 429`, or nothing.
std::optional<int> status_of(std::string_view line) {
  if (!line.starts_with("HTTP/")) {
    return std::nullopt;
  }
  line.remove_prefix(5);
  std::size_t version = 0;
  while (version < line.size() &&
         (std::isdigit(static_cast<unsigned char>(line[version])) || line[version] == '.')) {
    ++version;
  }
  if (version == 0 || version + 4 > line.size() || line[version] != ' ') {
    return std::nullopt;
  }
  std::string_view code = line.substr(version + 1, 3);
  for (char c : code) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  if (version + 4 < line.size() && line[version + 4] != ' ') {
    return std::nullopt; // a fourth digit
  }
  int status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
  if (status < 100 || status > 599) {
    return std::nullopt;
  }
  return status;
}

// The next line of `text` from `pos`, without its CRLF or LF; moves `pos` past it.
std::string_view next_line(std::string_view text, std::size_t& pos) {
  std::size_t end = text.find('\n', pos);
  std::string_view line =
      text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
  pos = end == std::string_view::npos ? text.size() : end + 1;
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

} // namespace

std::optional<ResponseHead> last_response_head(std::string_view text, std::string* why) {
  ResponseHead head;
  bool in_head = false;
  bool seen_text = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::string_view line = next_line(text, pos);
    if (std::optional<int> status = status_of(line)) {
      // A new head: the ones before it no longer count.
      head.status = *status;
      head.fields.clear();
      head.bad_lines = 0;
      ++head.heads;
      in_head = true;
      seen_text = true;
      continue;
    }
    if (!in_head) {
      if (!seen_text && !trim(line).empty()) {
        if (why != nullptr) {
          *why = "its first line is not an HTTP status line (HTTP/1.1 200 OK)";
        }
        return std::nullopt;
      }
      continue; // a body or trailers, until the next status line
    }
    if (line.empty()) {
      in_head = false;
      continue;
    }
    if (is_ows(line.front())) {
      // Obsolete line folding: the value goes on.
      if (!head.fields.empty()) {
        std::string& value = head.fields.back().value;
        std::string_view more = trim(line);
        if (!more.empty()) {
          value += value.empty() ? "" : " ";
          value += more;
        }
      } else {
        ++head.bad_lines;
      }
      continue;
    }
    std::size_t colon = line.find(':');
    std::string_view name = line.substr(0, colon);
    bool named = colon != std::string_view::npos && !name.empty();
    for (char c : name) {
      named = named && is_tchar(c);
    }
    if (!named) {
      ++head.bad_lines;
      continue;
    }
    HeadField field;
    for (char c : name) {
      field.name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    field.value = std::string(trim(line.substr(colon + 1)));
    head.fields.push_back(std::move(field));
  }
  if (head.heads == 0) {
    if (why != nullptr) {
      *why = "it is empty";
    }
    return std::nullopt;
  }
  return head;
}

std::vector<std::string_view> field_values(const ResponseHead& head, std::string_view name) {
  std::vector<std::string_view> values;
  for (const HeadField& field : head.fields) {
    if (field.name == name) {
      values.push_back(field.value);
    }
  }
  return values;
}

} // namespace ratelimit::util

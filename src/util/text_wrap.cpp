#include "util/text_wrap.hpp"

#include "util/utf8.hpp"

namespace ratelimit::util {

namespace {

// Appends the lines of one line of text (no line feed in it) to `lines`.
void wrap_line(std::string_view line, std::size_t width, std::vector<std::string>& lines) {
  std::size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos) {
    lines.emplace_back();
    return;
  }
  std::string current(indent, ' ');
  std::size_t columns = indent;
  bool empty = true; // no word on `current` yet
  std::size_t at = indent;
  while (at < line.size()) {
    std::size_t end = line.find(' ', at);
    if (end == std::string_view::npos) {
      end = line.size();
    }
    std::string_view word = line.substr(at, end - at);
    at = line.find_first_not_of(' ', end);
    if (at == std::string_view::npos) {
      at = line.size();
    }
    std::size_t word_columns = display_width(word);
    if (!empty && columns + 1 + word_columns > width) {
      lines.push_back(std::move(current));
      current.assign(indent, ' ');
      columns = indent;
      empty = true;
    }
    if (!empty) {
      current += ' ';
      ++columns;
    }
    current += word;
    columns += word_columns;
    empty = false;
  }
  lines.push_back(std::move(current));
}

} // namespace

std::vector<std::string> wrap_text(std::string_view text, std::size_t width) {
  std::vector<std::string> lines;
  for (;;) {
    std::size_t end = text.find('\n');
    wrap_line(text.substr(0, end), width, lines);
    if (end == std::string_view::npos) {
      return lines;
    }
    text.remove_prefix(end + 1);
  }
}

} // namespace ratelimit::util

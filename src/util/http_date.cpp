#include "util/http_date.hpp"

#include <array>
#include <cctype>
#include <string>

namespace ratelimit::util {

std::int64_t days_from_civil(std::int64_t year, int month, int day) {
  // Howard Hinnant's algorithm: years counted from March, so that the leap day comes last.
  year -= month <= 2 ? 1 : 0;
  std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  std::int64_t year_of_era = year - era * 400;
  std::int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  std::int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

namespace {

constexpr std::array<std::string_view, 12> k_months = {"jan", "feb", "mar", "apr", "may", "jun",
                                                       "jul", "aug", "sep", "oct", "nov", "dec"};

bool leap(std::int64_t year) {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

int days_in_month(std::int64_t year, int month) {
  static constexpr std::array<int, 12> k_days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && leap(year) ? 29 : k_days[month - 1];
}

// Reads a date's parts from the front of a text, one at a time; any part that is not there
// makes the reader fail, and it stays failed.
class Reader {
public:
  explicit Reader(std::string_view text) : m_text(text) {}

  // A word of letters, lower-cased.
  std::string_view word() {
    std::size_t start = m_pos;
    while (m_pos < m_text.size() && std::isalpha(static_cast<unsigned char>(m_text[m_pos]))) {
      m_lower[m_pos] = static_cast<char>(std::tolower(static_cast<unsigned char>(m_text[m_pos])));
      ++m_pos;
    }
    m_ok = m_ok && m_pos > start;
    return std::string_view(m_lower).substr(start, m_pos - start);
  }

  // From `min_digits` to `max_digits` digits.
  int number(int min_digits, int max_digits) {
    int value = 0;
    int digits = 0;
    while (digits < max_digits && m_pos < m_text.size() && m_text[m_pos] >= '0' &&
           m_text[m_pos] <= '9') {
      value = value * 10 + (m_text[m_pos++] - '0');
      ++digits;
    }
    m_ok = m_ok && digits >= min_digits;
    return value;
  }

  void expect(char c) {
    if (m_pos < m_text.size() && m_text[m_pos] == c) {
      ++m_pos;
    } else {
      m_ok = false;
    }
  }

  // One space, or two where asctime pads a one-digit day.
  void spaces() {
    expect(' ');
    if (m_pos < m_text.size() && m_text[m_pos] == ' ') {
      ++m_pos;
    }
  }

  int month() {
    std::string_view name = word();
    for (std::size_t i = 0; i < k_months.size(); ++i) {
      if (name == k_months[i]) {
        return static_cast<int>(i) + 1;
      }
    }
    m_ok = false;
    return 1;
  }

  bool done() const { return m_ok && m_pos == m_text.size(); }
  bool ok() const { return m_ok; }

private:
  std::string_view m_text;
  std::string m_lower{m_text};
  std::size_t m_pos = 0;
  bool m_ok = true;
};

struct Parts {
  std::int64_t year = 0;
  int month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

void read_time(Reader& reader, Parts& parts) {
  parts.hour = reader.number(2, 2);
  reader.expect(':');
  parts.minute = reader.number(2, 2);
  reader.expect(':');
  parts.second = reader.number(2, 2);
}

std::optional<Parts> read(std::string_view text) {
  Parts parts;
  Reader reader(text);
  std::string_view day_name = reader.word();
  if (!reader.ok()) {
    return std::nullopt;
  }
  if (text.size() > day_name.size() && text[day_name.size()] == ',') {
    reader.expect(',');
    reader.expect(' ');
    parts.day = reader.number(2, 2);
    if (day_name.size() == 3) {
      // IMF-fixdate: 06 Nov 1994 08:49:37 GMT
      reader.expect(' ');
      parts.month = reader.month();
      reader.expect(' ');
      parts.year = reader.number(4, 4);
    } else {
      // RFC 850: 06-Nov-94 08:49:37 GMT
      reader.expect('-');
      parts.month = reader.month();
      reader.expect('-');
      int year = reader.number(2, 2);
      parts.year = year >= 70 ? 1900 + year : 2000 + year;
    }
    reader.expect(' ');
    read_time(reader, parts);
    reader.expect(' ');
    if (reader.word() != "gmt") {
      return std::nullopt;
    }
  } else {
    // asctime: Nov  6 08:49:37 1994
    reader.expect(' ');
    parts.month = reader.month();
    reader.spaces();
    parts.day = reader.number(1, 2);
    reader.expect(' ');
    read_time(reader, parts);
    reader.expect(' ');
    parts.year = reader.number(4, 4);
  }
  if (!reader.done()) {
    return std::nullopt;
  }
  return parts;
}

} // namespace

std::optional<std::int64_t> parse_http_date(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  std::optional<Parts> parts = read(text);
  if (!parts || parts->day < 1 || parts->day > days_in_month(parts->year, parts->month) ||
      parts->hour > 23 || parts->minute > 59 || parts->second > 60) {
    return std::nullopt;
  }
  return days_from_civil(parts->year, parts->month, parts->day) * 86400 + parts->hour * 3600 +
         parts->minute * 60 + parts->second;
}

} // namespace ratelimit::util

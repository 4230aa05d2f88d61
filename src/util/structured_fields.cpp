#include "util/structured_fields.hpp"

#include "util/utf8.hpp"

#include <utility>

namespace ratelimit::util::sf {

const BareItem* Member::param(std::string_view name) const {
  for (const Parameter& parameter : params) {
    if (parameter.key == name) {
      return &parameter.value;
    }
  }
  return nullptr;
}

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_lcalpha(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_alpha(char c) {
  return is_lcalpha(c) || (c >= 'A' && c <= 'Z');
}

// RFC 9110's tchar.
bool is_tchar(char c) {
  static constexpr std::string_view k_marks = "!#$%&'*+-.^_`|~";
  return is_alpha(c) || is_digit(c) || k_marks.find(c) != std::string_view::npos;
}

bool is_base64(char c) {
  return is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=';
}

int hex_value(char c) {
  if (is_digit(c)) {
    return c - '0';
  }
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; // lower case only, as the RFC says
}

// The RFC's parsing algorithms, over one field value; each returns false at the first
// character that breaks the grammar, with the reason in `m_error`.
class Parser {
public:
  explicit Parser(std::string_view text) : m_text(text) {}

  bool list(std::vector<Member>& members) { return field(members, false); }
  bool dictionary(std::vector<Member>& members) { return field(members, true); }
  const std::string& error() const { return m_error; }

private:
  bool field(std::vector<Member>& members, bool keyed) {
    skip_sp();
    while (!at_end()) {
      Member member;
      if (keyed) {
        if (!key(member.key)) {
          return false;
        }
        if (peek() == '=') {
          ++m_pos;
          if (!item_or_inner_list(member)) {
            return false;
          }
        } else {
          member.item.type = BareItem::Type::boolean;
          member.item.number = 1;
          if (!params(member.params)) {
            return false;
          }
        }
        add_keyed(members, std::move(member));
      } else {
        if (!item_or_inner_list(member)) {
          return false;
        }
        members.push_back(std::move(member));
      }
      skip_ows();
      if (at_end()) {
        break;
      }
      if (peek() != ',') {
        return fail("expected \",\" between members");
      }
      ++m_pos;
      skip_ows();
      if (at_end()) {
        return fail("a \",\" ends the value");
      }
    }
    skip_sp();
    return at_end() || fail("text after the value");
  }

  static void add_keyed(std::vector<Member>& members, Member member) {
    for (Member& existing : members) {
      if (existing.key == member.key) {
        existing = std::move(member);
        return;
      }
    }
    members.push_back(std::move(member));
  }

  bool item_or_inner_list(Member& member) {
    if (peek() != '(') {
      return bare_item(member.item) && params(member.params);
    }
    ++m_pos;
    member.is_inner_list = true;
    while (true) {
      skip_sp();
      if (at_end()) {
        return fail("an inner list has no \")\"");
      }
      if (peek() == ')') {
        ++m_pos;
        return params(member.params);
      }
      Member inner;
      if (!bare_item(inner.item) || !params(inner.params)) {
        return false;
      }
      member.inner.push_back(std::move(inner));
      if (peek() != ' ' && peek() != ')') {
        return fail("expected a space or \")\" in an inner list");
      }
    }
  }

  bool params(std::vector<Parameter>& parameters) {
    while (peek() == ';') {
      ++m_pos;
      skip_sp();
      Parameter parameter;
      if (!key(parameter.key)) {
        return false;
      }
      parameter.value.type = BareItem::Type::boolean;
      parameter.value.number = 1;
      if (peek() == '=') {
        ++m_pos;
        if (!bare_item(parameter.value)) {
          return false;
        }
      }
      bool replaced = false;
      for (Parameter& existing : parameters) {
        if (existing.key == parameter.key) {
          existing.value = std::move(parameter.value);
          replaced = true;
        }
      }
      if (!replaced) {
        parameters.push_back(std::move(parameter));
      }
    }
    return true;
  }

  bool key(std::string& out) {
    if (!is_lcalpha(peek()) && peek() != '*') {
      return fail("a key starts with a lower-case letter or \"*\"");
    }
    std::size_t start = m_pos;
    while (!at_end() && (is_lcalpha(peek()) || is_digit(peek()) || peek() == '_' || peek() == '-' ||
                         peek() == '.' || peek() == '*')) {
      ++m_pos;
    }
    out = std::string(m_text.substr(start, m_pos - start));
    return true;
  }

  bool bare_item(BareItem& item) {
    char c = peek();
    if (c == '-' || is_digit(c)) {
      return number(item);
    }
    if (c == '"') {
      return string(item);
    }
    if (is_alpha(c) || c == '*') {
      return token(item);
    }
    if (c == ':') {
      return bytes(item);
    }
    if (c == '?') {
      return boolean(item);
    }
    if (c == '@') {
      ++m_pos;
      if (!number(item)) {
        return false;
      }
      if (item.type != BareItem::Type::integer) {
        return fail("a date is a whole number of seconds");
      }
      item.type = BareItem::Type::date;
      return true;
    }
    if (c == '%') {
      return display_string(item);
    }
    return fail("not an item (a number, \"string\", token, :bytes:, ?boolean, @date)");
  }

  bool number(BareItem& item) {
    item.type = BareItem::Type::integer;
    bool negative = peek() == '-';
    if (negative) {
      ++m_pos;
    }
    if (!is_digit(peek())) {
      return fail("a number has a digit after its sign");
    }
    std::int64_t whole = 0;
    int digits = 0;
    while (is_digit(peek())) {
      if (++digits > 15) {
        return fail("an integer has at most 15 digits");
      }
      whole = whole * 10 + (peek() - '0');
      ++m_pos;
    }
    std::int64_t thousandths = 0;
    if (peek() == '.') {
      if (digits > 12) {
        return fail("a decimal has at most 12 digits before its point");
      }
      ++m_pos;
      int decimals = 0;
      while (is_digit(peek())) {
        if (++decimals > 3) {
          return fail("a decimal has at most 3 digits after its point");
        }
        thousandths = thousandths * 10 + (peek() - '0');
        ++m_pos;
      }
      if (decimals == 0) {
        return fail("a decimal ends with its point");
      }
      for (int i = decimals; i < 3; ++i) {
        thousandths *= 10;
      }
      item.type = BareItem::Type::decimal;
      whole = whole * 1000 + thousandths;
    }
    item.number = negative ? -whole : whole;
    return true;
  }

  bool string(BareItem& item) {
    item.type = BareItem::Type::string;
    ++m_pos;
    while (!at_end()) {
      char c = m_text[m_pos++];
      if (c == '"') {
        return true;
      }
      if (c == '\\') {
        if (at_end() || (peek() != '"' && peek() != '\\')) {
          return fail("a string escapes only \\\" and \\\\");
        }
        c = m_text[m_pos++];
      } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
        return fail("a string holds printable ASCII only");
      }
      item.text += c;
    }
    return fail("a string has no closing quote");
  }

  bool token(BareItem& item) {
    item.type = BareItem::Type::token;
    std::size_t start = m_pos;
    while (!at_end() && (is_tchar(peek()) || peek() == ':' || peek() == '/')) {
      ++m_pos;
    }
    item.text = std::string(m_text.substr(start, m_pos - start));
    return true;
  }

  bool bytes(BareItem& item) {
    item.type = BareItem::Type::bytes;
    std::size_t start = ++m_pos;
    while (!at_end() && peek() != ':') {
      if (!is_base64(peek())) {
        return fail("a byte sequence holds base64 only");
      }
      ++m_pos;
    }
    if (at_end()) {
      return fail("a byte sequence has no closing \":\"");
    }
    item.text = std::string(m_text.substr(start, m_pos - start));
    ++m_pos;
    return true;
  }

  bool boolean(BareItem& item) {
    item.type = BareItem::Type::boolean;
    ++m_pos;
    if (peek() != '0' && peek() != '1') {
      return fail("a boolean is ?0 or ?1");
    }
    item.number = peek() - '0';
    ++m_pos;
    return true;
  }

  bool display_string(BareItem& item) {
    item.type = BareItem::Type::display_string;
    ++m_pos;
    if (peek() != '"') {
      return fail("a display string starts with %\"");
    }
    ++m_pos;
    while (!at_end()) {
      char c = m_text[m_pos++];
      if (c == '"') {
        // What the escapes make must be UTF-8.
        for (std::string_view rest = item.text; !rest.empty();) {
          Utf8Char decoded = decode_utf8(rest);
          if (decoded.length == 0) {
            return fail("a display string is not UTF-8");
          }
          rest.remove_prefix(decoded.length);
        }
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
        return fail("a display string holds printable ASCII only");
      }
      if (c == '%') {
        int high = m_pos < m_text.size() ? hex_value(m_text[m_pos]) : -1;
        int low = m_pos + 1 < m_text.size() ? hex_value(m_text[m_pos + 1]) : -1;
        if (high < 0 || low < 0) {
          return fail("a display string's % is followed by two lower-case hex digits");
        }
        c = static_cast<char>(high * 16 + low);
        m_pos += 2;
      }
      item.text += c;
    }
    return fail("a display string has no closing quote");
  }

  bool at_end() const { return m_pos >= m_text.size(); }
  char peek() const { return at_end() ? '\0' : m_text[m_pos]; }
  void skip_sp() {
    while (peek() == ' ') {
      ++m_pos;
    }
  }
  void skip_ows() {
    while (peek() == ' ' || peek() == '\t') {
      ++m_pos;
    }
  }
  bool fail(std::string why) {
    if (m_error.empty()) {
      m_error = std::move(why);
    }
    return false;
  }

  std::string_view m_text;
  std::size_t m_pos = 0;
  std::string m_error;
};

std::optional<std::vector<Member>> parse(std::string_view text, std::string* why, bool keyed) {
  Parser parser(text);
  std::vector<Member> members;
  if (keyed ? parser.dictionary(members) : parser.list(members)) {
    return members;
  }
  if (why != nullptr) {
    *why = parser.error();
  }
  return std::nullopt;
}

} // namespace

std::optional<std::vector<Member>> parse_list(std::string_view text, std::string* why) {
  return parse(text, why, false);
}

std::optional<std::vector<Member>> parse_dictionary(std::string_view text, std::string* why) {
  return parse(text, why, true);
}

} // namespace ratelimit::util::sf

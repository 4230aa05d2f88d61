#pragma once

// Structured Field Values for HTTP (RFC 9651, which obsoletes RFC 8941): the Lists and
// Dictionaries that fields such as RateLimit and RateLimit-Policy are made of. Parsing
// follows the RFC's algorithms: a field value that breaks the grammar anywhere fails whole,
// as the RFC requires of a recipient.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::util::sf {

// A bare item: one of the RFC's types, with its value in the member that type uses.
struct BareItem {
  enum class Type { integer, decimal, string, token, bytes, boolean, date, display_string };
  Type type = Type::integer;
  // Integer and Date: the value; Decimal: the value in thousandths (its three decimals);
  // Boolean: 0 or 1.
  std::int64_t number = 0;
  // String, Token and Display String: the text (unescaped, decoded); Byte Sequence: the
  // base64 text as written, not decoded.
  std::string text;
};

struct Parameter {
  std::string key;
  BareItem value;
};

// An item, or an inner list of items: a member of a List or the value of a Dictionary
// member.
struct Member {
  std::string key;               // in a Dictionary; empty in a List
  bool is_inner_list = false;    // then `inner` holds the items and `item` is unused
  BareItem item;                 // a bare Boolean true for a Dictionary key without a value
  std::vector<Member> inner;     // the inner list's items, each with its parameters
  std::vector<Parameter> params; // of the item, or of the inner list
  // The parameter `name`, or null.
  const BareItem* param(std::string_view name) const;
};

// The members of the List or Dictionary `text` (several field lines joined with ","), or
// nothing when `text` breaks the grammar, with the reason in `why` when given. An empty
// value is an empty List or Dictionary. A Dictionary's repeated key keeps its last value, in
// the place of its first, as the RFC says; so do repeated parameters.
std::optional<std::vector<Member>> parse_list(std::string_view text, std::string* why = nullptr);
std::optional<std::vector<Member>> parse_dictionary(std::string_view text,
                                                    std::string* why = nullptr);

} // namespace ratelimit::util::sf

#pragma once

#include <string>
#include <string_view>

namespace ratelimit::util {

// `key` for human output: quoted, with control characters (C0, C1, bidirectional) and
// bytes that are not UTF-8 escaped, so that no key can forge a line of output, move the
// terminal's cursor or reorder the text around it.
std::string printable_key(std::string_view key);

// `key` as one shell word that gives the key back exactly, on one line: bare when it is
// plain, in single quotes when it is printable, else in bash's $'...' with escapes; with
// `-- ` before it when it starts with a dash.
std::string shell_word_for_key(std::string_view key);

} // namespace ratelimit::util

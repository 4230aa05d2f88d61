#include "util/text_wrap.hpp"

#include <doctest/doctest.h>

using ratelimit::util::wrap_text;
using Lines = std::vector<std::string>;

TEST_CASE("wrap_text breaks at spaces within the width") {
  CHECK(wrap_text("one two three four", 9) == Lines{"one two", "three", "four"});
  CHECK(wrap_text("one two three four", 13) == Lines{"one two three", "four"});
  CHECK(wrap_text("exactly ten", 11) == Lines{"exactly ten"});
  CHECK(wrap_text("", 10) == Lines{""});
}

TEST_CASE("wrap_text keeps a word wider than the line whole, on a line of its own") {
  CHECK(wrap_text("see https://example.com/a/long/path now", 10) ==
        Lines{"see", "https://example.com/a/long/path", "now"});
}

TEST_CASE("wrap_text ends a line at each line feed and keeps blank lines") {
  CHECK(wrap_text("first line\n\nsecond", 40) == Lines{"first line", "", "second"});
  CHECK(wrap_text("trailing\n", 40) == Lines{"trailing", ""});
}

TEST_CASE("wrap_text indents continuation lines as far as the line's own indent") {
  CHECK(wrap_text("  ratelimit try api -r 10/s", 16) == Lines{"  ratelimit try", "  api -r 10/s"});
}

TEST_CASE("wrap_text counts terminal columns, not bytes") {
  // "é" is two bytes and one column.
  CHECK(wrap_text("\xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9", 7) ==
        Lines{"\xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9"});
}

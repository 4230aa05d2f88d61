#include "util/utf8.hpp"

#include <doctest/doctest.h>

using ratelimit::util::decode_utf8;
using ratelimit::util::display_width;

TEST_CASE("decode_utf8 reads one character and rejects what is not UTF-8") {
  CHECK(decode_utf8("a").code_point == U'a');
  CHECK(decode_utf8("\xc3\xa9t\xc3\xa9").code_point == U'é');
  CHECK(decode_utf8("\xc3\xa9t\xc3\xa9").length == 2);
  CHECK(decode_utf8("\xe2\x80\xae").code_point == U'\u202e');
  CHECK(decode_utf8("\xf0\x9f\x94\x91").code_point == U'\U0001f511');
  CHECK(decode_utf8("\xf0\x9f\x94\x91").length == 4);
  CHECK(decode_utf8("").length == 0);
  CHECK(decode_utf8("\xff").length == 0);             // never in UTF-8
  CHECK(decode_utf8("\x80").length == 0);             // a continuation byte alone
  CHECK(decode_utf8("\xc0\xaf").length == 0);         // overlong '/'
  CHECK(decode_utf8("\xed\xa0\x80").length == 0);     // a surrogate
  CHECK(decode_utf8("\xf4\x90\x80\x80").length == 0); // past U+10FFFF
  CHECK(decode_utf8("\xe2\x80").length == 0);         // cut short
}

TEST_CASE("display_width counts terminal columns") {
  CHECK(display_width("plain") == 5);
  CHECK(display_width("\xc3\xa9t\xc3\xa9") == 3);
  CHECK(display_width("\xe6\xbc\xa2\xe5\xad\x97") == 4); // two CJK characters
  CHECK(display_width("\xf0\x9f\x94\x91") == 2);         // an emoji
  CHECK(display_width("zero\xe2\x80\x8bwidth") == 9);    // U+200B takes none
  CHECK(display_width("e\xcc\x81") == 1);                // a combining accent
}

#include "util/key_text.hpp"

#include <doctest/doctest.h>

using ratelimit::util::printable_key;
using ratelimit::util::shell_word_for_key;

TEST_CASE("printable_key quotes and escapes what could draw on the terminal") {
  CHECK(printable_key("api") == "\"api\"");
  CHECK(printable_key("quo\"te back\\slash") == "\"quo\\\"te back\\\\slash\"");
  CHECK(printable_key("new\nline\ttab\x1b[2J") == "\"new\\nline\\ttab\\x1b[2J\"");
  CHECK(printable_key("raw\xff") == "\"raw\\xff\"");
  CHECK(printable_key("csi\xc2\x9b"
                      "2J") == "\"csi\\u009b2J\"");
  CHECK(printable_key("\xe2\x80\xae"
                      "evil") == "\"\\u202eevil\"");
  CHECK(printable_key("ütf-8 🔑") == "\"ütf-8 🔑\"");
}

TEST_CASE("shell_word_for_key gives one shell word for the key") {
  CHECK(shell_word_for_key("api") == "api");
  CHECK(shell_word_for_key("host:8080/path") == "host:8080/path");
  CHECK(shell_word_for_key("my key") == "'my key'");
  CHECK(shell_word_for_key("it's") == "'it'\\''s'");
  CHECK(shell_word_for_key("") == "''");
  CHECK(shell_word_for_key("-dash") == "-- -dash");
  CHECK(shell_word_for_key("ütf") == "'ütf'");
  CHECK(shell_word_for_key("new\nline's") == "$'new\\nline\\'s'");
  CHECK(shell_word_for_key("quo\"te") == "$'quo\\\"te'");
  CHECK(shell_word_for_key("raw\xff") == "$'raw\\xff'");
}

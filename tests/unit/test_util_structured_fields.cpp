#include "util/structured_fields.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::util::sf;
using Type = BareItem::Type;

TEST_CASE("util::sf::parse_list reads items of every type, with parameters") {
  auto list = parse_list(
      R"("default";r=50;t=30, tok/en:x, 42, -1.5, :aGk=:, ?1, @1700000000, %"caf%c3%a9")");
  REQUIRE(list);
  REQUIRE(list->size() == 8);
  CHECK((*list)[0].item.type == Type::string);
  CHECK((*list)[0].item.text == "default");
  REQUIRE((*list)[0].param("r") != nullptr);
  CHECK((*list)[0].param("r")->number == 50);
  CHECK((*list)[0].param("t")->number == 30);
  CHECK((*list)[0].param("q") == nullptr);
  CHECK((*list)[1].item.type == Type::token);
  CHECK((*list)[1].item.text == "tok/en:x");
  CHECK((*list)[2].item.number == 42);
  CHECK((*list)[3].item.type == Type::decimal);
  CHECK((*list)[3].item.number == -1500);
  CHECK((*list)[4].item.type == Type::bytes);
  CHECK((*list)[4].item.text == "aGk=");
  CHECK((*list)[5].item.type == Type::boolean);
  CHECK((*list)[5].item.number == 1);
  CHECK((*list)[6].item.type == Type::date);
  CHECK((*list)[6].item.number == 1700000000);
  CHECK((*list)[7].item.type == Type::display_string);
  CHECK((*list)[7].item.text == "caf\xc3\xa9");
}

TEST_CASE("util::sf::parse_list reads inner lists, whitespace and empty values as the RFC says") {
  auto list = parse_list("  (1 2;a);b=?0 ,\t3;c  ");
  REQUIRE(list);
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].is_inner_list);
  REQUIRE((*list)[0].inner.size() == 2);
  CHECK((*list)[0].inner[1].param("a")->number == 1);
  CHECK((*list)[0].param("b")->number == 0);
  CHECK((*list)[1].param("c")->type == Type::boolean);
  auto empty = parse_list("");
  REQUIRE(empty);
  CHECK(empty->empty());
  // A repeated parameter keeps its last value.
  auto repeated = parse_list("1;a=1;a=2");
  REQUIRE(repeated);
  CHECK((*repeated)[0].params.size() == 1);
  CHECK((*repeated)[0].param("a")->number == 2);
}

TEST_CASE("util::sf::parse_list refuses whatever breaks the grammar, saying why") {
  for (const char* bad : {"1,",
                          ",1",
                          "1 2",
                          "\"open",
                          "\"bad\\escape\"",
                          "1;A=1",
                          "1;=1",
                          "1234567890123456",
                          "1.2345",
                          "1234567890123.5",
                          "1.",
                          "-",
                          "?2",
                          ":not base64!:",
                          "(1 2",
                          "(1,2)",
                          "@1.5",
                          "%\"%C3%A9\"",
                          "%\"%ff\"",
                          "limit=100",
                          "a\tb",
                          "\x80",
                          "1;a=\"\x01\""}) {
    std::string why;
    CAPTURE(bad);
    CHECK_FALSE(parse_list(bad, &why));
    CHECK_FALSE(why.empty());
  }
}

TEST_CASE("util::sf::parse_dictionary reads keys with and without values, the last one kept") {
  auto dictionary = parse_dictionary("limit=100, remaining=50;x, reset=5, flag, limit=7");
  REQUIRE(dictionary);
  REQUIRE(dictionary->size() == 4);
  CHECK((*dictionary)[0].key == "limit");
  CHECK((*dictionary)[0].item.number == 7);
  CHECK((*dictionary)[1].param("x") != nullptr);
  CHECK((*dictionary)[3].key == "flag");
  CHECK((*dictionary)[3].item.type == Type::boolean);
  CHECK_FALSE(parse_dictionary("\"default\";r=5"));
  CHECK_FALSE(parse_dictionary("Limit=5"));
}

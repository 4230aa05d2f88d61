#include "util/http_head.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::util;

TEST_CASE("util::last_response_head keeps the last of several heads, names in lower case") {
  std::string text =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 301 Moved Permanently\r\nLocation: /b\r\nX-RateLimit-Remaining: 9\r\n\r\n"
      "HTTP/2 429 \r\nRetry-After:  5 \r\nx-ratelimit-remaining: 0\r\n\r\n";
  auto head = last_response_head(text, nullptr);
  REQUIRE(head);
  CHECK(head->status == 429);
  CHECK(head->heads == 3);
  REQUIRE(head->fields.size() == 2);
  CHECK(head->fields[0].name == "retry-after");
  CHECK(head->fields[0].value == "5");
  CHECK(field_values(*head, "x-ratelimit-remaining") == std::vector<std::string_view>{"0"});
  CHECK(field_values(*head, "location").empty());
}

TEST_CASE("util::last_response_head reads LF lines, folding, repeats, bodies and bad lines") {
  std::string text = "\n\nHTTP/1.0 200 OK\nA: one\n  two\n\tthree\nA: four\nnot a field\n"
                     ": empty name\nB c: space\n\nbody line\nHTTP/1.1 is not a status\n";
  auto head = last_response_head(text, nullptr);
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->heads == 1);
  CHECK(field_values(*head, "a") == std::vector<std::string_view>{"one two three", "four"});
  CHECK(head->bad_lines == 3);
  // curl -i: a head, its body, then the next head.
  auto with_bodies = last_response_head(
      "HTTP/1.1 302 Found\r\n\r\n<html>\r\nHTTP/1.1 503 No\r\nA: b\r\n", nullptr);
  REQUIRE(with_bodies);
  CHECK(with_bodies->status == 503);
  CHECK(with_bodies->heads == 2);
  CHECK(field_values(*with_bodies, "a") == std::vector<std::string_view>{"b"});
}

TEST_CASE("util::last_response_head refuses a text that holds no head, saying why") {
  for (const char* bad :
       {"", "\r\n\n", "Retry-After: 5\r\n", "HTTP/1.1 42 Short\r\n", "HTTP/1.1 2000 Long\r\n",
        "HTTP/x 200 OK\r\n", "HTTP/1.1 600 Out\r\n", "{\"json\": true}", "HTTP/1.1200 OK"}) {
    std::string why;
    CAPTURE(bad);
    CHECK_FALSE(last_response_head(bad, &why));
    CHECK_FALSE(why.empty());
  }
}

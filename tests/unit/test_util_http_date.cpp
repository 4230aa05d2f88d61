#include "util/http_date.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::util;

TEST_CASE("util::parse_http_date reads the three forms RFC 9110 names") {
  constexpr std::int64_t k_1994 = 784111777; // Sun, 06 Nov 1994 08:49:37 GMT
  CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == k_1994);
  CHECK(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == k_1994);
  CHECK(parse_http_date("Sun Nov  6 08:49:37 1994") == k_1994);
  CHECK(parse_http_date("  sun, 06 NOV 1994 08:49:37 gmt\t") == k_1994);
  CHECK(parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT") == 1445412480);
  CHECK(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
  CHECK(parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT") == 951825600);
  CHECK(parse_http_date("Thursday, 01-Jan-30 00:00:00 GMT") == 1893456000);
}

TEST_CASE("util::parse_http_date refuses what names no time") {
  for (const char* bad : {"", "120", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
                          "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
                          "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                          "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT x",
                          "Sun Nov  6 08:49:37 94", "Sun, 06 Nov 1994 8:49:37 GMT"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_http_date(bad));
  }
}

TEST_CASE("util::days_from_civil counts days from 1970, before it too") {
  CHECK(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(1969, 12, 31) == -1);
  CHECK(days_from_civil(2000, 3, 1) == 11017);
}

#include "util/prometheus_text.hpp"

#include <doctest/doctest.h>

using namespace ratelimit;
using util::PrometheusText;

TEST_CASE("util::prometheus_label_value escapes backslash, double quote and line feed") {
  CHECK(util::prometheus_label_value("api") == "\"api\"");
  CHECK(util::prometheus_label_value("") == "\"\"");
  CHECK(util::prometheus_label_value("a\\b") == "\"a\\\\b\"");
  CHECK(util::prometheus_label_value("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(util::prometheus_label_value("two\nlines") == "\"two\\nlines\"");
  // Nothing else is escaped: the format knows no other escape.
  CHECK(util::prometheus_label_value("tab\there") == "\"tab\there\"");
  CHECK(util::prometheus_label_value("caf\xc3\xa9 \xf0\x9f\x94\x91") ==
        "\"caf\xc3\xa9 \xf0\x9f\x94\x91\"");
}

TEST_CASE("util::prometheus_label_value replaces bytes that are not UTF-8 with U+FFFD") {
  CHECK(util::prometheus_label_value("a\xff"
                                     "b") == "\"a\xef\xbf\xbd"
                                             "b\"");
  CHECK(util::prometheus_label_value("\xc3") == "\"\xef\xbf\xbd\""); // cut short
  CHECK(util::prometheus_label_value("\xed\xa0\x80") ==              // a surrogate
        "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
}

TEST_CASE("util::prometheus_help_text escapes backslash and line feed only") {
  CHECK(util::prometheus_help_text("a \"b\" c\\d\ne") == "a \"b\" c\\\\d\\ne");
}

TEST_CASE("util::is_utf8 and util::hex_bytes") {
  CHECK(util::is_utf8(""));
  CHECK(util::is_utf8("plain \xc3\xa9"));
  CHECK_FALSE(util::is_utf8("\xff"));
  CHECK_FALSE(util::is_utf8("ok\xc0\xaf"));
  CHECK(util::hex_bytes("") == "");
  CHECK(util::hex_bytes("a\xff\x00z") == "61ff"); // a string literal ends at the NUL
  CHECK(util::hex_bytes(std::string_view("a\xff\x00z", 4)) == "61ff007a");
}

TEST_CASE("util::PrometheusText writes HELP, TYPE and samples") {
  PrometheusText text;
  text.family("jobs_total", "counter", "Jobs run, by queue.\nSecond line.");
  PrometheusText::Label labels[] = {{"queue", "a\"b"}, {"result", "ok"}};
  text.sample("jobs_total", labels, "12");
  text.family("depth", "gauge", "Depth.");
  text.sample("depth", {}, "-1");
  CHECK(text.str() == "# HELP jobs_total Jobs run, by queue.\\nSecond line.\n"
                      "# TYPE jobs_total counter\n"
                      "jobs_total{queue=\"a\\\"b\",result=\"ok\"} 12\n"
                      "# HELP depth Depth.\n"
                      "# TYPE depth gauge\n"
                      "depth -1\n");
}

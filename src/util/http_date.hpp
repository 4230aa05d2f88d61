#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ratelimit::util {

// The seconds since the Unix epoch that an HTTP-date names (RFC 9110, section 5.6.7), in any
// of the three forms a recipient must accept: IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`,
// the obsolete RFC 850 form `Sunday, 06-Nov-94 08:49:37 GMT` and asctime's
// `Sun Nov  6 08:49:37 1994`. Nothing when `text` is none of them or names no real time.
// Names of days and months are read in any case, the day's name is not checked against the
// date, and surrounding whitespace is ignored. A two-digit year is 19YY from 70 on, else
// 20YY: without a clock, the RFC's "not more than 50 years ahead" rule reads so until 2020,
// and no server sends this form any more.
std::optional<std::int64_t> parse_http_date(std::string_view text);

// The days from 1970-01-01 to the date `year`-`month`-`day` of the proleptic Gregorian
// calendar (negative before 1970). `month` in 1..12, `day` in 1..31.
std::int64_t days_from_civil(std::int64_t year, int month, int day);

} // namespace ratelimit::util

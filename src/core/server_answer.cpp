#include "core/server_answer.hpp"

#include "core/bounds.hpp"
#include "core/quota_fields.hpp"
#include "core/rate.hpp"
#include "util/http_date.hpp"
#include "util/http_head.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ratelimit::core {

namespace {

// Seconds written as digits with an optional fraction, `30`, `1.5`, as nanoseconds; at most
// k_max_duration. Nothing for anything else.
std::optional<Nanos> parse_decimal_seconds(std::string_view text, Nanos unit) {
  if (text.empty() || text.front() == '.' || text.back() == '.') {
    return std::nullopt;
  }
  Nanos whole = 0;
  Nanos fraction = 0;
  Nanos scale = unit;
  bool after_point = false;
  for (char c : text) {
    if (c == '.' && !after_point) {
      after_point = true;
    } else if (c < '0' || c > '9') {
      return std::nullopt;
    } else if (!after_point) {
      whole = std::min<Nanos>(whole * 10 + (c - '0'), k_max_duration);
    } else if (scale >= 10) {
      scale /= 10;
      fraction += (c - '0') * scale;
    }
  }
  Wide total = static_cast<Wide>(whole) * unit + fraction;
  return static_cast<Nanos>(std::min<Wide>(total, k_max_duration));
}

// The server's clock against ours, from Date.
void read_date(const util::ResponseHead& head, Nanos arrived, ServerAnswer& answer) {
  std::vector<std::string_view> dates = util::field_values(head, "date");
  if (dates.empty()) {
    return;
  }
  std::optional<std::int64_t> seconds = util::parse_http_date(dates.back());
  if (!seconds || *seconds < 0 || *seconds > k_max_time / k_nanos_per_second) {
    answer.note("date", dates.back(), "ignored: not an HTTP-date (Sun, 06 Nov 1994 08:49:37 GMT)");
    return;
  }
  Nanos offset = *seconds * k_nanos_per_second - arrived;
  if (offset > k_clock_tolerance || offset < -k_clock_tolerance) {
    answer.server_offset = offset;
    answer.note("date", dates.back(),
                fmt::format("the server's clock is {} {} ours: its times are moved by as much",
                            format_seconds(offset < 0 ? -offset : offset),
                            offset < 0 ? "behind" : "ahead of"));
  }
}

// Retry-After and retry-after-ms: the latest time any of them names.
void read_retry_after(const util::ResponseHead& head, Nanos arrived, ServerAnswer& answer) {
  for (std::string_view field : {"retry-after", "retry-after-ms"}) {
    for (std::string_view value : util::field_values(head, field)) {
      std::optional<Nanos> at;
      if (field == "retry-after") {
        at = retry_after_time(value, arrived, answer.server_offset);
      } else if (auto millis = parse_decimal_seconds(value, k_nanos_per_milli)) {
        at = arrived + *millis;
      }
      if (!at) {
        answer.note(field, value,
                    field == "retry-after" ? "ignored: neither delay-seconds nor an HTTP-date"
                                           : "ignored: not a number of milliseconds");
      } else if (*at <= arrived) {
        answer.note(field, value, "no wait: the time it names has come");
      } else if (answer.retry_at && *answer.retry_at != *at) {
        answer.note(field, value, "given more than once: the latest time counts");
        answer.retry_at = std::max(*answer.retry_at, *at);
      } else {
        answer.retry_at = *at;
      }
    }
  }
}

} // namespace

void ServerAnswer::note(std::string_view field, std::string_view value, std::string text) {
  notes.push_back(
      {std::string(field), std::string(value.substr(0, k_note_value_bytes)), std::move(text)});
}

Nanos on_our_clock(Wide at, Nanos server_offset, Nanos arrived) {
  return static_cast<Nanos>(
      std::min<Wide>(at - server_offset, static_cast<Wide>(arrived) + k_max_duration));
}

std::optional<Nanos> retry_after_time(std::string_view value, Nanos arrived, Nanos server_offset) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
    value.remove_suffix(1);
  }
  if (auto delay = parse_decimal_seconds(value, k_nanos_per_second)) {
    return arrived + *delay;
  }
  std::optional<std::int64_t> date = util::parse_http_date(value);
  if (!date || *date < 0 || *date > k_max_time / k_nanos_per_second) {
    return std::nullopt;
  }
  return on_our_clock(static_cast<Wide>(*date) * k_nanos_per_second, server_offset, arrived);
}

Result<ServerAnswer> understand_answer(const AnswerInput& input) {
  ServerAnswer answer;
  util::ResponseHead head;
  if (input.head) {
    std::string why;
    std::optional<util::ResponseHead> last = util::last_response_head(*input.head, &why);
    if (!last) {
      return Result<ServerAnswer>::failure(
          fmt::format("not an HTTP response head: {}; expected what curl -D writes, e.g. "
                      "\"HTTP/1.1 429 Too Many Requests\" and its fields",
                      why));
    }
    head = std::move(*last);
    answer.heads = head.heads;
    answer.status = head.status;
  }
  if (head.bad_lines > 0) {
    answer.note("", "",
                fmt::format("{} line{} of the head {} not a field (NAME: VALUE): ignored",
                            head.bad_lines, head.bad_lines == 1 ? "" : "s",
                            head.bad_lines == 1 ? "is" : "are"));
  }
  if (input.status) {
    if (answer.status && *answer.status != *input.status) {
      answer.note("", std::to_string(*answer.status),
                  fmt::format("the head's status: {} given instead", *input.status));
    }
    answer.status = input.status;
  }
  read_date(head, input.arrived, answer);
  if (input.retry_after) {
    std::optional<Nanos> at =
        retry_after_time(*input.retry_after, input.arrived, answer.server_offset);
    if (!at) {
      return Result<ServerAnswer>::failure(fmt::format(
          "invalid Retry-After \"{}\": expected delay-seconds (120) or an HTTP-date (Wed, 21 "
          "Oct 2015 07:28:00 GMT)",
          std::string_view(*input.retry_after).substr(0, k_note_value_bytes)));
    }
    if (!util::field_values(head, "retry-after").empty()) {
      answer.note("retry-after", util::field_values(head, "retry-after").front(),
                  "the head's: the one given counts instead");
    }
    if (*at > input.arrived) {
      answer.retry_at = at;
    }
  } else {
    read_retry_after(head, input.arrived, answer);
  }
  read_quota_fields(head, input.arrived, answer);
  return answer;
}

} // namespace ratelimit::core

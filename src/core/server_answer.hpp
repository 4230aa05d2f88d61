#pragma once

// What an HTTP server's answer says about its rate limit: the status, Retry-After, where the
// quota stands and the policy behind it, read from a response head as `curl -D` writes it.
//
// Fields read (names in any case; repeated fields and comma-joined values both read):
// - Retry-After (delay-seconds, or an HTTP-date) and retry-after-ms (milliseconds, as
//   OpenAI sends it): the latest time any of them names.
// - RateLimit and RateLimit-Policy, as Structured Field Lists (RFC 9651) of the IETF draft
//   (draft-ietf-httpapi-ratelimit-headers-08 on): `"name";r=REMAINING;t=SECONDS` and
//   `"name";q=QUOTA;w=SECONDS`, names as strings or tokens; also the draft-07 forms,
//   `RateLimit: limit=L, remaining=R, reset=T` (a Dictionary) and `RateLimit-Policy:
//   L;w=SECONDS`.
// - RateLimit-Limit, -Remaining, -Reset (drafts up to 06) and X-RateLimit-Limit,
//   -Remaining, -Reset (GitHub, and many others).
//
// Reset fields carry delta-seconds in the drafts and epoch seconds at GitHub: a value below
// 10^9 is delta-seconds from the answer's arrival (10^9 seconds are 31 years: no window is
// that long), from 10^9 to 10^12 epoch seconds (10^9 is September 2001: no server's clock is
// earlier), from 10^12 on epoch milliseconds. Decimals are read.
//
// Times the server states by its own clock (HTTP-dates, epoch resets) are moved by the
// server's offset when its Date field differs from the arrival by more than
// `k_clock_tolerance`, as far as Date proves the offset; within that the clocks are taken to
// agree (Date has whole seconds, and the answer took time to come).
//
// What is malformed, out of range or already past is ignored, never an error, and said in
// `notes`.

#include "core/result.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::core {

inline constexpr Nanos k_clock_tolerance = 2 * k_nanos_per_second;

// Where a quota stands: `remaining` requests until `reset`, or until no time the answer
// said (then `reset` is empty).
struct QuotaStanding {
  std::string field;  // the field it came from, lower case: "ratelimit", "x-ratelimit-remaining"
  std::string policy; // the policy's name, where the field names one
  std::int64_t remaining = 0;
  std::optional<Nanos> reset; // when the quota is restored, in nanoseconds since the epoch
};

// A quota policy: `quota` requests per `window` (none when the answer does not say).
struct QuotaPolicy {
  std::string field;
  std::string policy;
  std::int64_t quota = 0;
  std::optional<Nanos> window;
};

// Something the reading of a field noticed: a value ignored and why, or how it was read.
struct FieldNote {
  std::string field; // lower case; empty for the head as a whole
  std::string value; // as written, at most k_note_value_bytes
  std::string note;
};

inline constexpr std::size_t k_note_value_bytes = 120;

// What an answer said.
struct ServerAnswer {
  std::optional<int> status; // the last head's, or the one given
  // When the server asked to be called again, in nanoseconds since the epoch; none when it
  // did not, or named a time already past.
  std::optional<Nanos> retry_at;
  std::vector<QuotaStanding> standings;
  std::vector<QuotaPolicy> policies;
  std::vector<FieldNote> notes;
  int heads = 0; // how many response heads the text held
  // How far the server's clock is ahead of ours (negative: behind), as its Date field
  // proved it, or 0 when within k_clock_tolerance.
  Nanos server_offset = 0;

  // Notes `text` on `field`'s `value`, of which its first k_note_value_bytes are kept.
  void note(std::string_view field, std::string_view value, std::string text);
};

// What is known of an answer: the text holding its head (`curl -D` output), and/or a status
// and a Retry-After value known otherwise, which take the place of the head's; and when it
// arrived, in nanoseconds since the epoch.
struct AnswerInput {
  std::optional<std::string_view> head;
  std::optional<int> status;
  std::optional<std::string_view> retry_after;
  Nanos arrived = 0;
};

// Reads `input`. Fails only when a head is given and holds no HTTP response head at all (the
// message says why), or when the given `retry_after` is neither delay-seconds nor an
// HTTP-date.
Result<ServerAnswer> understand_answer(const AnswerInput& input);

// The time a Retry-After value names: delay-seconds (decimals read) from `arrived`, or an
// HTTP-date moved by `server_offset`. Nothing when it is neither; `arrived` itself or earlier
// when it names no wait.
std::optional<Nanos> retry_after_time(std::string_view value, Nanos arrived, Nanos server_offset);

// A time the server stated by its own clock, `server_offset` ahead of ours, on our clock; at
// most k_max_duration after `arrived` (a Date far off, a reset decades away).
Nanos on_our_clock(Wide at, Nanos server_offset, Nanos arrived);

} // namespace ratelimit::core

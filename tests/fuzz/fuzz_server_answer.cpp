// core::understand_answer on any text, read as what `curl -D` wrote: it never crashes, a
// refusal says why, and what it understands is in range: a status of 100..599, a
// Retry-After and resets after the arrival, counts from 0 to 10^12, windows above 0. The
// structured-field parser and the HTTP-date parser also read the whole text.
#include "core/bounds.hpp"
#include "core/rate.hpp"
#include "core/server_answer.hpp"
#include "fuzz_check.hpp"
#include "util/http_date.hpp"
#include "util/structured_fields.hpp"

#include <cstdint>
#include <string>

using namespace ratelimit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  constexpr core::Nanos k_arrived = 1'700'000'000 * core::k_nanos_per_second;
  core::AnswerInput input;
  input.head = text;
  input.arrived = k_arrived;
  auto answer = core::understand_answer(input);
  if (!answer) {
    fuzz::check(!answer.error().empty(), "a refusal says why", text);
  } else {
    fuzz::check(answer->status && *answer->status >= 100 && *answer->status <= 599,
                "a status of 100..599", text);
    fuzz::check(answer->heads >= 1, "a head was read", text);
    fuzz::check(!answer->retry_at ||
                    (*answer->retry_at > k_arrived && *answer->retry_at <= core::k_max_time),
                "Retry-After after the arrival, in range", text);
    for (const core::QuotaStanding& standing : answer->standings) {
      fuzz::check(standing.remaining >= 0 && standing.remaining <= core::k_max_count,
                  "a remaining count in range", text);
      fuzz::check(!standing.reset ||
                      (*standing.reset > k_arrived && *standing.reset <= core::k_max_time),
                  "a reset after the arrival, in range", text);
    }
    for (const core::QuotaPolicy& policy : answer->policies) {
      fuzz::check(policy.quota >= 0 && policy.quota <= core::k_max_count, "a quota in range", text);
      fuzz::check(!policy.window || (*policy.window > 0 && *policy.window <= core::k_max_duration),
                  "a window in range", text);
    }
    for (const core::FieldNote& note : answer->notes) {
      fuzz::check(!note.note.empty() && note.value.size() <= core::k_note_value_bytes,
                  "a note says something, its value clipped", text);
    }
  }
  std::string why;
  if (!util::sf::parse_list(text, &why)) {
    fuzz::check(!why.empty(), "a list refused says why", text);
  }
  why.clear();
  if (!util::sf::parse_dictionary(text, &why)) {
    fuzz::check(!why.empty(), "a dictionary refused says why", text);
  }
  if (auto seconds = util::parse_http_date(text)) {
    fuzz::check(*seconds >= util::days_from_civil(0, 1, 1) * 86400 &&
                    *seconds < util::days_from_civil(10000, 1, 1) * 86400,
                "a date of the years 0000..9999", text);
  }
  return 0;
}

#pragma once

#include "cli/limit_options.hpp"
#include "cli/output_settings.hpp"
#include "core/decide.hpp"

#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ratelimit::util {
class JsonObject;
}

namespace ratelimit::cli {

// `(token-bucket 10/s, burst 10)`, `(fixed-window 100/min)`.
std::string describe_limit(core::Algorithm algorithm, const core::Limit& limit);

// The line that explains a denial: the limit, why (a full queue, beyond `max_wait`, too
// far away) and when to retry.
std::string refusal_message(const LimitedRequest& request, const core::Decision& decision,
                            core::Nanos max_wait);

// Prints what a decision means to the user as `output` says: on a denial one line on stderr
// (unless -q); with --json one object on stdout (with `store_error` when decided on the local
// database under --on-store-error=local: `local_fallback`, the store's error). `waited` is the
// time slept, for wait and run; `max_wait` the longest wait the request accepted (--timeout).
void report(const OutputSettings& output, const LimitedRequest& request,
            const core::Decision& decision, std::string_view local_fallback,
            std::optional<core::Nanos> waited = std::nullopt,
            core::Nanos max_wait = std::numeric_limits<core::Nanos>::max());

// Each limit's figures in `decision` as a JSON array, the binding one marked.
std::string limits_json(core::Algorithm algorithm, std::span<const core::Limit> limits,
                        const core::Decision& decision);

// Flushes standard output. When a write to it has failed, says so on stderr (once in the
// process) and returns false.
bool check_stdout();

// `2025-06-01T12:00:00.123Z`: `time` in nanoseconds since the epoch, in UTC, to the
// millisecond (rounded down).
std::string utc_time(core::Nanos time);

// Adds the pause of a decision or standing to a JSON object, when one runs:
// `paused_until` (UTC, as utc_time) and `paused_until_ms` (milliseconds since the epoch,
// rounded up: a caller that waits until then is never early).
void add_pause_fields(util::JsonObject& object, const core::Decision& decision);

// A key's server budget as a JSON object, `remaining`, `reset` (UTC) and `reset_after_ms`
// (from `now`, rounded up), or null when none runs.
std::string budget_json(const std::optional<core::BudgetStanding>& budget, core::Nanos now);

// A key's adaptive rate at `now`, as status and metrics show it; none for a key that no
// --adaptive call has used, or that holds no limits (its ceiling is then unknown).
struct AdaptiveView {
  std::int64_t micro_rate = 0; // the rate it grants at, in micro-requests per second
  core::Rate ceiling;          // the slowest of its limits' rates
  core::Nanos cut_at = 0;      // the last cut; 0: never cut
  std::int64_t cut_from = 0;   // the rate that cut remembered (W_max), micro-requests/s
};
std::optional<AdaptiveView> adaptive_view(const core::KeyState& state, core::Nanos now);

// Micro-requests per second as requests per second: `4.625` (exact, for JSON and metrics);
// `4.62/s`, `50/s`, `0.0167/s` (three figures, for people).
std::string per_second_number(std::int64_t micro_rate);
std::string per_second_text(std::int64_t micro_rate);

// `adaptive` as a JSON object, `rate_per_s`, `ceiling_per_s`, `last_cut` (UTC, or null),
// `cut_from_per_s` (or null), or null when the key has no adaptive rate.
std::string adaptive_json(const std::optional<AdaptiveView>& adaptive);

// Milliseconds as a JSON number: whole when exact, else with up to six decimals.
std::string json_millis(core::Nanos duration);

} // namespace ratelimit::cli

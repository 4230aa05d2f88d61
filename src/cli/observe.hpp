#pragma once

#include "cli/output_settings.hpp"
#include "cli/store_opener.hpp"
#include "core/answer_pause.hpp"
#include "core/server_answer.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace ratelimit::cli {

// The longest pause an answer may impose unless --max-pause says otherwise: as long as the
// longest backoff pause (--backoff-max), so that a key is never stopped for longer than
// ratelimit would stop it on its own without the user's word.
inline constexpr const char* k_default_max_pause = "5min";

// Parses --max-pause (default k_default_max_pause), above 0; throws UsageError.
core::Nanos parse_max_pause(const std::optional<std::string>& text);

// The largest response head read: a head is a few kilobytes; a larger file is something else.
inline constexpr std::size_t k_max_head_bytes = 1 << 20;

// A response head as read from a file.
struct HeadFile {
  std::string text;
  // When the answer arrived, in nanoseconds since the epoch: the file's last modification
  // (curl writes the head as it arrives), at most `now`; `now` for standard input or
  // anything but a regular file.
  core::Nanos arrived = 0;
};

// Reads what a response head file holds, at most k_max_head_bytes; `-` is standard input.
// Throws UsageError (naming `path`) when it cannot be read or is larger.
HeadFile read_head_file(const std::string& path, core::Nanos now);

// Where an observation happens: `observe`, whose store failures fail it (status 3, as
// `pause`), or `run --observe` after its command ran, where a store failure is a warning and
// the command's status stands.
enum class ObserveAfter { nothing, command };

// How an answer is applied besides what it says.
struct ObserveSettings {
  // The longest an answer may hold the key: a pause, or a spent budget until its reset.
  core::Nanos max_pause = 0;
  // The grant sequence of the answered request (Grant::seq: run --observe, observe
  // --grant), if known.
  std::optional<std::int64_t> grant;
  // A 429 or 503 without Retry-After pauses for the backoff: `backoff` doubled `attempt`
  // times (run --retries), at most `max_pause`.
  core::Nanos backoff = core::k_throttled_pause;
  int attempt = 0;
};

// What observing an answer did.
struct Observed {
  core::AnswerPause pause;
  // The answer was 429 or 503.
  bool throttled = false;
  // The answer's status, when known.
  std::optional<int> status;
};

// Applies `answer` to `key` on the store of `stores`, in one operation (Store::observe):
// the pause it asks (core::answer_pause from the clock's now, capped at `settings.max_pause`),
// its quota standings as the key's server budget (each reset at most `max_pause` away), its
// policies, and the answered grant. A warning on stderr, unless -q, when the cap shortens a
// pause or a spent budget. Under --json prints one object: the key, what the answer said
// (status, retry_after, standings, policies, notes), the pause and the budget.
Observed observe_answer(StoreOpener& stores, const OutputSettings& output, std::string_view key,
                        const core::ServerAnswer& answer, const ObserveSettings& settings,
                        ObserveAfter after);

// After a command of `run --adaptive --backoff-on`: its exit told a throttle (a status of
// --backoff-on) or a success (0); the key's adaptive rate learns it as from an answer. A
// store failure is a warning, as after `run --observe`.
void report_command_outcome(StoreOpener& stores, std::string_view key, bool throttled);

// After a command whose request got no answer to observe: the grant `seq` of `key` awaits
// none any more (its request is not on its way to the server). A store failure is a warning.
void forget_awaited_answer(StoreOpener& stores, std::string_view key, std::int64_t seq);

} // namespace ratelimit::cli

#pragma once

#include "core/time.hpp"
#include "util/signals.hpp"

#include <string>
#include <string_view>

namespace ratelimit::cli {

// A one-line live countdown on stderr while `wait` and `run` sleep until their slot,
// `waiting 4.2s for "api"`, redrawn in place and erased before the sleep returns. It is
// shown only when stderr is a terminal and `quiet` is false, so scripts and cron mail stay
// clean, and only while the process is in the terminal's foreground: a background job
// would draw over the line the user is typing.
class Countdown {
public:
  // How often the line is redrawn while sleeping.
  static constexpr core::Nanos k_redraw_interval = 100 * core::k_nanos_per_milli;

  // `key` as the user typed it; `enabled` false makes every call do nothing.
  Countdown(std::string_view key, bool enabled);
  // Erases the line if it is shown.
  ~Countdown();
  Countdown(const Countdown&) = delete;
  Countdown& operator=(const Countdown&) = delete;

  // Whether a countdown belongs on stderr: it is a terminal other than a dumb one, and
  // -q was not given.
  static bool wanted(bool quiet);

  // Draws the line for `left` nanoseconds still to sleep; erases it when `left` <= 0.
  void show(core::Nanos left);

  // Removes the line, if shown, leaving the cursor at the start of the blank line.
  void erase();

private:
  std::string m_key; // already made printable
  bool m_enabled;
  bool m_shown = false;
};

// `waiting 4.2s for "api"`: the time left rounded up to a tenth of a second up to a minute,
// to whole seconds beyond (`1m05s`, `2h00m30s`); `printable_key` is shown as given.
std::string countdown_line(core::Nanos left, std::string_view printable_key);

// Cuts `line` to at most `columns` bytes without splitting a UTF-8 sequence.
std::string fit_to_width(std::string line, std::size_t columns);

// Sleeps like `signals.sleep_for(duration)`, with the countdown for `key` on stderr when
// `Countdown::wanted(quiet)`. The deadline is the same either way: the redraws only wake
// the sleep, they never move it.
int sleep_with_countdown(util::InterruptSignals& signals, core::Nanos duration,
                         std::string_view key, bool quiet);

} // namespace ratelimit::cli

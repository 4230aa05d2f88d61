#include "cli/countdown.hpp"

#include "cli/report.hpp"
#include "util/key_text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace ratelimit::cli {

namespace {

// Carriage return, then erase to the end of the line.
constexpr std::string_view k_erase = "\r\033[K";

void write_stderr(std::string_view text) {
  while (!text.empty()) {
    ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      return; // a countdown is not worth failing for
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
}

// A background job must leave the terminal alone: the line it would draw or erase is the
// one the user is typing on.
bool in_foreground() {
  pid_t foreground = ::tcgetpgrp(STDERR_FILENO);
  return foreground != -1 && foreground == ::getpgrp();
}

std::size_t terminal_columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) != 0) {
    return 0;
  }
  return size.ws_col;
}

} // namespace

std::string countdown_line(core::Nanos left, std::string_view printable_key) {
  constexpr core::Nanos k_tenth = 100 * core::k_nanos_per_milli;
  std::string time;
  if (left <= 60 * core::k_nanos_per_second) {
    std::int64_t tenths = core::ceil_div(std::max<core::Nanos>(left, 0), k_tenth);
    time = fmt::format("{}.{}s", tenths / 10, tenths % 10);
  } else {
    time = core::format_duration(left);
  }
  return fmt::format("waiting {} for {}", time, printable_key);
}

std::string fit_to_width(std::string line, std::size_t columns) {
  if (line.size() <= columns) {
    return line;
  }
  std::size_t end = columns;
  // Step back over UTF-8 continuation bytes to the start of the cut character.
  while (end > 0 && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80) {
    --end;
  }
  line.resize(end);
  return line;
}

Countdown::Countdown(std::string_view key, bool enabled)
    : m_key(enabled ? util::printable_key(key) : std::string()), m_enabled(enabled) {}

Countdown::~Countdown() {
  erase();
}

bool Countdown::wanted(bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) {
    return false;
  }
  // A dumb terminal would print the escape sequence instead of obeying it.
  const char* term = std::getenv("TERM");
  return !(term && std::strcmp(term, "dumb") == 0);
}

void Countdown::show(core::Nanos left) {
  if (!m_enabled) {
    return;
  }
  if (left <= 0) {
    erase();
    return;
  }
  if (!in_foreground()) {
    m_shown = false; // the line drawn, if any, is no longer the current one
    return;
  }
  std::string line = countdown_line(left, m_key);
  // A line that wraps could no longer be erased with a carriage return.
  if (std::size_t columns = terminal_columns(); columns > 1) {
    line = fit_to_width(std::move(line), columns - 1);
  }
  // Drawing over the old line, then erasing its rest, does not flicker.
  write_stderr(fmt::format("\r{}\033[K", line));
  m_shown = true;
}

void Countdown::erase() {
  if (m_shown && in_foreground()) {
    write_stderr(k_erase);
    m_shown = false;
  }
}

int sleep_with_countdown(util::InterruptSignals& signals, core::Nanos duration,
                         std::string_view key, bool quiet) {
  if (duration <= 0 || !Countdown::wanted(quiet)) {
    return signals.sleep_for(duration);
  }
  Countdown countdown(key, true);
  int signal = signals.sleep_for(
      duration, [&countdown](std::int64_t left) { countdown.show(left); },
      Countdown::k_redraw_interval);
  countdown.erase();
  return signal;
}

} // namespace ratelimit::cli

#pragma once

#include <string_view>

namespace ratelimit::util {

// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed (cron, daemons and `>&-`
// start programs so), so that no file opened later, such as the database, gets one of them
// and receives what is meant for standard output or error. Costs one fcntl(2) per
// descriptor when they are open. Returns false when one is closed and /dev/null cannot be
// opened.
bool open_standard_descriptors();

// Writes `text` on standard error, unbuffered. A failure (a closed or full stream, a pipe
// without a reader: no SIGPIPE) is ignored: a diagnostic that cannot be shown must not
// change what the program does.
void write_stderr(std::string_view text);

// Writes `text` on standard output, through stdio's buffer (CLI11's help and exec(3) use
// it too). A failure is remembered for `stdout_error`; nothing throws.
void write_stdout(std::string_view text);

// Flushes standard output, remembering a failure for `stdout_error`.
void flush_stdout();

// Flushes standard output; returns 0 when everything written to it so far has been
// written, else the errno of the failure (EIO when none is known).
int stdout_error();

} // namespace ratelimit::util

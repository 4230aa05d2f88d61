#pragma once

#include <string_view>

namespace ratelimit::util {

enum class WriteResult {
  written,
  // The reader has gone (EPIPE, when SIGPIPE does not end the process first).
  reader_gone,
  // Another error, errno set.
  failed,
};

// Writes all of `bytes` to `fd`: retries short writes and EINTR, and waits with poll(2) on
// a descriptor that someone left non-blocking.
WriteResult write_all(int fd, std::string_view bytes);

enum class InputWait {
  readable, // `input` has data, an end of file or an error to read
  reader_gone,
};

// Waits until `input` can be read without blocking, unless the reader of `output` goes
// away first (a pipe whose read end is closed reports an error to poll(2)), so that a
// filter blocked on an idle producer still notices when its output is no longer wanted.
InputWait wait_for_input(int input, int output);

// Whether `output` is a pipe or socket whose reader has gone, without blocking.
bool reader_gone(int output);

// Sleeps `duration_ns` (monotonic clock) unless the reader of `output` goes away first;
// false then. Signals keep their dispositions: one that ends the process ends the sleep.
bool sleep_unless_reader_gone(int output, std::int64_t duration_ns);

} // namespace ratelimit::util

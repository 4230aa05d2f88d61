#pragma once

#include <string>
#include <string_view>

namespace ratelimit::util {

// How `replace_file` writes.
struct ReplaceOptions {
  unsigned mode = 0644; // the new file's mode, less the umask
  // Whether the content reaches the disk before the rename. Without it a crash soon after
  // may leave an empty or partial file at `path`: for a cache whose reader checks what it
  // reads, and which would rather not pay for an fsync.
  bool durable = true;
};

// Replaces the file `path` with `content` atomically: writes a temporary file beside it
// (`PATH.PID.tmp`, which a reader globbing `*.prom` does not take), flushes it to disk and
// renames it over `path`, so that a reader sees the old file or the new one, whole, never a
// part. The file gets mode 0644 less the umask (see ReplaceOptions). Returns 0, or the errno
// of the step that failed; the temporary file is then removed and `path` left as it was.
int replace_file(const std::string& path, std::string_view content, ReplaceOptions options = {});

} // namespace ratelimit::util

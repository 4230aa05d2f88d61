#pragma once

#include <string>
#include <string_view>

namespace ratelimit::util {

// Replaces the file `path` with `content` atomically: writes a temporary file beside it
// (`PATH.PID.tmp`, which a reader globbing `*.prom` does not take), flushes it to disk and
// renames it over `path`, so that a reader sees the old file or the new one, whole, never a
// part. The file gets mode 0644 less the umask. Returns 0, or the errno of the step that
// failed; the temporary file is then removed and `path` left as it was.
int replace_file(const std::string& path, std::string_view content);

} // namespace ratelimit::util

#pragma once

#include <string>

namespace ratelimit::util {

// The directory part of `path` ("." when it has none).
std::string parent_directory(const std::string& path);

// Creates `directory` and its missing parents with the mode the umask leaves of 0777, as
// mkdir -p does, or of `mode` for `directory` itself; throws std::runtime_error with the
// reason on failure. An existing directory is left as it is.
void make_directories(const std::string& directory, unsigned mode = 0777);

} // namespace ratelimit::util

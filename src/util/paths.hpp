#pragma once

#include <string>

namespace ratelimit::util {

// The directory part of `path` ("." when it has none).
std::string parent_directory(const std::string& path);

// Creates `directory` and its missing parents (mode 0755 before the umask); throws
// std::runtime_error with the reason on failure.
void make_directories(const std::string& directory);

} // namespace ratelimit::util

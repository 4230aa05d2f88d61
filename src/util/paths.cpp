#include "util/paths.hpp"

#include "util/errno_text.hpp"

#include <cerrno>
#include <stdexcept>
#include <sys/stat.h>

namespace ratelimit::util {

std::string parent_directory(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    return ".";
  }
  if (slash == 0) {
    return "/";
  }
  return path.substr(0, slash);
}

void make_directories(const std::string& directory, unsigned mode) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) {
      throw std::runtime_error("\"" + directory + "\" is not a directory");
    }
    return;
  }
  std::string parent = parent_directory(directory);
  if (parent != directory) {
    make_directories(parent);
  }
  if (::mkdir(directory.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create directory \"" + directory +
                             "\": " + describe_errno(errno));
  }
}

} // namespace ratelimit::util

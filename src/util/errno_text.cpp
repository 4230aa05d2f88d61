#include "util/errno_text.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>

namespace ratelimit::util {

std::string describe_errno(int error) {
  switch (error) {
  case ENOSPC:
  case EDQUOT:
    return "the disk is full";
  case EROFS:
    return "the file system is read-only";
  case EACCES:
    return "permission denied";
  case EPERM:
    return "operation not permitted (is the file immutable?)";
  default:
    break;
  }
  std::string text = std::strerror(error);
  if (!text.empty()) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

} // namespace ratelimit::util

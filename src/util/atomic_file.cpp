#include "util/atomic_file.hpp"

#include "util/fd_io.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace ratelimit::util {

int replace_file(const std::string& path, std::string_view content, ReplaceOptions options) {
  std::string scratch = path + "." + std::to_string(::getpid()) + ".tmp";
  // One left by a process of the same PID that died: made anew, so that it has our mode.
  ::unlink(scratch.c_str());
  int fd = ::open(scratch.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                  static_cast<mode_t>(options.mode));
  if (fd < 0) {
    return errno;
  }
  int error = 0;
  if (write_all(fd, content) != WriteResult::written) {
    error = errno != 0 ? errno : EIO;
  } else if (options.durable && ::fsync(fd) != 0) {
    // Without it a crash soon after the rename could leave an empty file in place of the
    // old one.
    error = errno;
  }
  if (::close(fd) != 0 && error == 0) {
    error = errno;
  }
  if (error == 0 && ::rename(scratch.c_str(), path.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) {
    ::unlink(scratch.c_str());
  }
  return error;
}

} // namespace ratelimit::util

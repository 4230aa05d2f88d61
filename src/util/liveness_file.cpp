#include "util/liveness_file.hpp"

#include "util/clock.hpp"
#include "util/errno_text.hpp"
#include "util/paths.hpp"

#include <cerrno>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace ratelimit::util {

LivenessFile::LivenessFile(const std::string& directory, const std::string& name) {
  make_directories(directory);
  // A file left by a process of the same pid that was killed before removing it: another
  // suffix.
  std::uint64_t nonce = static_cast<std::uint64_t>(monotonic_nanos());
  for (int attempt = 0;; ++attempt) {
    m_name = fmt::format("{}-{}-{:x}", name, ::getpid(), (nonce + attempt) & 0xffffff);
    m_path = directory + "/" + m_name;
    m_fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (m_fd >= 0 || errno != EEXIST || attempt == 16) {
      break;
    }
  }
  if (m_fd < 0) {
    throw std::runtime_error(
        fmt::format("cannot create \"{}\": {}", m_path, describe_errno(errno)));
  }
  // Nobody else has the file yet: this never waits.
  if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    ::unlink(m_path.c_str());
    ::close(m_fd);
    throw std::runtime_error(fmt::format("cannot lock \"{}\": {}", m_path, describe_errno(error)));
  }
}

LivenessFile::~LivenessFile() {
  // Removed first, so that a watcher woken by the close finds it gone.
  ::unlink(m_path.c_str());
  ::close(m_fd);
}

void LivenessFile::touch() const {
  int fd = ::open(m_path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    ::close(fd);
  }
}

bool owner_alive(const std::string& path) {
  // Read-only: closing it is IN_CLOSE_NOWRITE, which wakes nobody.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    return false;
  }
  bool alive = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return alive;
}

void remove_file(const std::string& path) {
  ::unlink(path.c_str());
}

DirectoryWatch::DirectoryWatch(const std::string& directory) {
  make_directories(directory);
  m_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (m_fd < 0 ||
      ::inotify_add_watch(m_fd, directory.c_str(), IN_CLOSE_WRITE | IN_DELETE | IN_ONLYDIR) < 0) {
    int error = errno;
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    throw std::runtime_error(
        fmt::format("cannot watch \"{}\": {}", directory, describe_errno(error)));
  }
}

DirectoryWatch::~DirectoryWatch() {
  ::close(m_fd);
}

bool DirectoryWatch::drain(const std::string& prefix) {
  bool concerned = false;
  alignas(inotify_event) char buffer[8192];
  for (;;) {
    ssize_t got = ::read(m_fd, buffer, sizeof buffer);
    if (got <= 0) {
      return concerned;
    }
    for (ssize_t offset = 0; offset < got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
      if ((event->mask & (IN_Q_OVERFLOW | IN_IGNORED)) != 0) {
        concerned = true;
      } else if (event->len > 0 && std::string_view(event->name).starts_with(prefix)) {
        concerned = true;
      }
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
}

} // namespace ratelimit::util

// The decision's side of a TLS relay: finding it, asking it to connect, starting it.
#include "store/tls/tls_relay.hpp"

#include "store/tls/tls_session_cache.hpp"
#include "store/tls/tls_stream.hpp"
#include "util/clock.hpp"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ratelimit::store::tls {

namespace {

// The longest line a relay or a decision sends: a TlsError's message.
constexpr std::size_t k_longest_line = 4096;

std::optional<TlsError::Kind> kind_named(std::string_view name) {
  if (name == "timeout") {
    return TlsError::Kind::timeout;
  }
  if (name == "unreachable") {
    return TlsError::Kind::unreachable;
  }
  if (name == "closed") {
    return TlsError::Kind::closed;
  }
  if (name == "other") {
    return TlsError::Kind::other;
  }
  return std::nullopt;
}

// Whether the socket file and its directory (open as `directory_fd`) can only be this user's:
// a relay of another user would see the plain commands, the password among them.
bool private_socket(int directory_fd, const std::string& name) {
  struct stat directory {};
  struct stat file {};
  return ::fstat(directory_fd, &directory) == 0 &&
         check_cache_directory(directory, ::geteuid()) == CacheEntryCheck::usable &&
         ::fstatat(directory_fd, name.c_str(), &file, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISSOCK(file.st_mode) && file.st_uid == ::geteuid();
}



} // namespace

std::string relay_kind_name(TlsError::Kind kind) {
  switch (kind) {
  case TlsError::Kind::timeout:
    return "timeout";
  case TlsError::Kind::unreachable:
    return "unreachable";
  case TlsError::Kind::closed:
    return "closed";
  case TlsError::Kind::other:
    break;
  }
  return "other";
}

std::string socket_path_through(int directory_fd, const std::string& name) {
  return fmt::format("/proc/self/fd/{}/{}", directory_fd, name);
}

bool peer_is_this_user(int fd) {
  ucred peer{};
  socklen_t length = sizeof peer;
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 && peer.uid == ::geteuid();
}

std::optional<std::string> read_relay_line(int fd, core::Nanos timeout, bool& timed_out) {
  core::Nanos deadline = util::monotonic_nanos() + timeout;
  std::string line;
  while (!line.ends_with('\n')) {
    core::Nanos left = deadline - util::monotonic_nanos();
    pollfd entry{fd, POLLIN, 0};
    int ready = left > 0 ? ::poll(&entry, 1, static_cast<int>(core::ceil_millis(left))) : 0;
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      timed_out = true;
      return std::nullopt;
    }
    char buffer[512];
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0 || line.size() > k_longest_line) {
      return std::nullopt;
    }
    line.append(buffer, static_cast<std::size_t>(got));
  }
  line.pop_back();
  return line;
}

std::optional<RelaySocket> relay_socket(const RelayTarget& target) {
  const TlsFiles& files = target.files;
  if (!files.relay || files.session_directory.empty()) {
    return std::nullopt;
  }
  // The files by name, not by their stamps as a session's identity: each connection the
  // relay makes reads them again, as the decision would have.
  auto environment = [](const char* name) {
    const char* value = std::getenv(name);
    return value ? fmt::format("{}={}", name, value) : std::string(name);
  };
  // A relative file name names a file in the directory of the decision that started the
  // relay, which is the relay's: a decision elsewhere has a relay of its own.
  std::string directory;
  for (const std::string* file : {&files.ca_file, &files.cert_file, &files.key_file}) {
    if (!file->empty() && !file->starts_with('/') && directory.empty()) {
      char* current = ::getcwd(nullptr, 0);
      directory = current ? current : "?";
      std::free(current);
    }
  }
  TlsSessionIdentity identity{target.host,
                              target.port,
                              "relay " + directory,
                              fmt::format("{};{};{}", files.ca_file, environment("SSL_CERT_FILE"),
                                          environment("SSL_CERT_DIR")),
                              files.cert_file,
                              files.key_file};
  // `HOST-PORT-HASH.tls`: HASH alone names the socket.
  std::string name = session_file_name(identity);
  return RelaySocket{files.session_directory,
                     fmt::format("relay-{}.sock", name.substr(name.size() - 20, 16))};
}

std::optional<int> connect_to_relay(const RelaySocket& socket, core::Nanos timeout) {
  core::Nanos deadline = util::monotonic_nanos() + timeout;
  int directory = ::open(socket.directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) {
    return std::nullopt;
  }
  std::string path = socket_path_through(directory, socket.name);
  int fd = private_socket(directory, socket.name) && path.size() < sizeof(sockaddr_un::sun_path)
               ? ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)
               : -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  // One short line into an empty socket: sent whole, or not at all (MSG_NOSIGNAL: a relay gone
  // meanwhile is no reason to die of SIGPIPE).
  std::string greeting = fmt::format("{} {}\n", k_relay_greeting, timeout);
  bool connected =
      fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      peer_is_this_user(fd) &&
      ::send(fd, greeting.data(), greeting.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(greeting.size());
  ::close(directory);
  if (!connected) {
    if (fd >= 0) {
      ::close(fd);
    }
    return std::nullopt;
  }
  bool timed_out = false;
  std::optional<std::string> answer = read_relay_line(fd, deadline - util::monotonic_nanos(),
                                                      timed_out);
  if (!answer) {
    ::close(fd);
    if (timed_out) {
      throw TlsError(TlsError::Kind::timeout, "connect");
    }
    // A relay that went away: the decision connects by itself.
    return std::nullopt;
  }
  if (*answer == "+") {
    return fd;
  }
  ::close(fd);
  std::string_view error = *answer;
  std::optional<TlsError::Kind> kind;
  if (error.starts_with('-') && error.find(' ') != std::string_view::npos) {
    kind = kind_named(error.substr(1, error.find(' ') - 1));
  }
  if (!kind) {
    return std::nullopt;
  }
  throw TlsError(*kind, std::string(error.substr(error.find(' ') + 1)));
}

void start_relay(const RelaySocket& socket, const RelayTarget& target, core::Nanos timeout) {
  if (!make_cache_directory(target.files.session_directory, target.files.session_home)) {
    return;
  }
  pid_t child = ::fork();
  if (child < 0) {
    return;
  }
  if (child == 0) {
    // A session of its own, and not this process's child: the relay outlives it, is not
    // reaped by it, and no signal to this process's group reaches it.
    ::setsid();
    if (::fork() == 0) {
      run_relay(socket, target, timeout);
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
}

} // namespace ratelimit::store::tls

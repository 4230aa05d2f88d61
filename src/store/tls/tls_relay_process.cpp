// The relay's side of a TLS relay (see tls_relay.hpp): a process of its own, forked from a
// decision that has just connected, so OpenSSL is loaded and warm. Its workers, children
// that serve one decision at a time, connect to the server ahead of the next decision; it
// starts one more whenever all are busy.
#include "store/tls/tls_relay.hpp"

#include "store/tls/tls_session_cache.hpp"
#include "util/clock.hpp"
#include "util/fd_io.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <memory>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace ratelimit::store::tls {

namespace {

// Whether all of `bytes` went to `fd`.
bool sent(int fd, std::string_view bytes) {
  return util::write_all(fd, bytes) == util::WriteResult::written;
}

// How long a relay waits for a connection before it exits.
constexpr core::Nanos k_relay_idle = 60 * core::k_nanos_per_second;
// How often it looks whether its socket is still the one at its path, and its workers alive.
constexpr int k_check_every_ms = 1000;
constexpr core::Nanos k_check_every = k_check_every_ms * core::k_nanos_per_milli;
// The most workers (children that serve one decision at a time) a relay keeps: one more is
// started when all are busy. A `run -j` waiter holds one while it waits for its slot.
constexpr std::size_t k_most_workers = 256;
// How long a child waits for the decision's greeting.
constexpr core::Nanos k_greeting_timeout = core::k_nanos_per_second;


// The timeout the greeting `line` gives, or nullopt when it is not a greeting.
std::optional<core::Nanos> greeting_timeout(std::string_view line) {
  if (!line.starts_with(k_relay_greeting) || line.size() < k_relay_greeting.size() + 2 ||
      line[k_relay_greeting.size()] != ' ') {
    return std::nullopt;
  }
  std::string_view digits = line.substr(k_relay_greeting.size() + 1);
  core::Nanos timeout = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), timeout);
  if (error != std::errc() || end != digits.data() + digits.size() || timeout <= 0) {
    return std::nullopt;
  }
  return timeout;
}

// Reads the reply to the PING sent on `tls`: a line, "+PONG" or an error such as NOAUTH
// (the decision authenticates itself). It proves the server answers this client: over
// TLS 1.3 a server that wants a client certificate refuses only once asked something.
void await_pong(TlsStream& tls) {
  std::array<char, 256> buffer{};
  std::size_t seen = 0;
  for (;;) {
    std::size_t length = tls.read(buffer.data(), buffer.size());
    seen += length;
    if (std::string_view(buffer.data(), length).ends_with("\r\n") || seen > 4096) {
      return;
    }
  }
}

// Carries bytes between the decision (`client`) and the server until either closes.
void carry(int client, TlsStream& tls) {
  std::array<char, 16 * 1024> buffer{};
  std::array<pollfd, 2> entries{pollfd{client, POLLIN, 0}, pollfd{tls.fd(), POLLIN, 0}};
  for (;;) {
    // All that has come from the server, before waiting again: poll(2) does not see what
    // OpenSSL has already read.
    while (std::size_t length = tls.read_available(buffer.data(), buffer.size())) {
      if (!sent(client, {buffer.data(), length})) {
        return;
      }
    }
    if (::poll(entries.data(), entries.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if (entries[0].revents != 0) {
      ssize_t length = ::read(client, buffer.data(), buffer.size());
      if (length < 0 && errno == EINTR) {
        continue;
      }
      if (length <= 0) {
        return;
      }
      tls.write({buffer.data(), static_cast<std::size_t>(length)});
    }
  }
}

// A connection to the server, checked with a PING (see await_pong).
std::unique_ptr<TlsStream> connect_checked(const RelayTarget& target, core::Nanos timeout) {
  auto tls = std::make_unique<TlsStream>(target.host, target.port, target.files, timeout);
  tls->write("PING\r\n");
  await_pong(*tls);
  return tls;
}

// The identity a connection to `target` is made under now (see TlsStream::session_identity):
// a connection made before one of its files changed is not used.
std::string identity_now(const RelayTarget& target) {
  return identity_text(TlsStream::session_identity(target.host, target.port, target.files))
      .value_or("");
}

// Whether the server closed, or wrote on, a connection that has been idle since its PONG.
bool gone_while_idle(const TlsStream& tls) {
  pollfd entry{tls.fd(), POLLIN | POLLRDHUP, 0};
  return tls.pending() || ::poll(&entry, 1, 0) != 0;
}

// What a worker tells the relay on its pipe: it took a decision's connection, or is done
// with it.
struct WorkerNews {
  pid_t worker;
  bool busy;
};

// Serves one decision's connection, `client`, with the connection `tls` made ahead under
// `identity` (null: none could be made) or, when that one failed, the server closed it
// meanwhile or a file has changed since, one made now with the decision's timeout, whose
// error is then the one told.
void serve(int client, std::unique_ptr<TlsStream>& tls, const std::string& identity,
           const RelayTarget& target) {
  bool timed_out = false;
  if (!peer_is_this_user(client)) {
    return;
  }
  std::optional<std::string> greeting = read_relay_line(client, k_greeting_timeout, timed_out);
  std::optional<core::Nanos> asked = greeting ? greeting_timeout(*greeting) : std::nullopt;
  if (!asked) {
    return;
  }
  bool relaying = false;
  try {
    if (!tls || gone_while_idle(*tls) || identity_now(target) != identity) {
      tls.reset();
      tls = connect_checked(target, *asked);
    }
    relaying = sent(client, "+\n");
    if (relaying) {
      carry(client, *tls);
    }
  } catch (const TlsError& error) {
    if (relaying) {
      // The decision speaks RESP now: it sees the connection closed, as over TCP.
      return;
    }
    std::string message = error.what();
    for (char& c : message) {
      c = c == '\n' ? ' ' : c;
    }
    sent(client, "-" + relay_kind_name(error.kind()) + " " + message + "\n");
  }
}

// A worker's work, one decision after another: connects to the server before the next
// decision asks (with the timeout of the decision that started the relay), so that the
// decision waits for no handshake; takes its connection from `listener`, telling the relay
// on `news` when it takes one and when it is done; exits once the relay has.
[[noreturn]] void work(int listener, int news, const RelayTarget& target, core::Nanos timeout) {
  pid_t relay = ::getppid();
  WorkerNews taken{::getpid(), true};
  WorkerNews done{::getpid(), false};
  while (::getppid() == relay) {
    std::unique_ptr<TlsStream> tls;
    std::string identity = identity_now(target);
    try {
      tls = connect_checked(target, timeout);
    } catch (const TlsError&) {
    }
    int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno != EINTR && errno != ECONNABORTED) {
        ::_exit(0);
      }
      continue;
    }
    sent(news, {reinterpret_cast<const char*>(&taken), sizeof taken});
    try {
      serve(client, tls, identity, target);
    } catch (...) {
      // A connection that failed midway: the decision sees it closed.
    }
    ::close(client);
    sent(news, {reinterpret_cast<const char*>(&done), sizeof done});
  }
  ::_exit(0);
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Detaches from the decision that forked it: no descriptor of its own (its lock on a
// database, its output), default signal dispositions, none blocked.
void detach() {
  int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) {
    ::dup2(null, fd);
  }
  if (::close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < 65536; ++fd) {
      ::close(fd);
    }
  }
  for (int signal = 1; signal < NSIG; ++signal) {
    std::signal(signal, SIG_DFL);
  }
  // Children are reaped by the kernel; a decision that goes away mid-write is no signal.
  std::signal(SIGCHLD, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::umask(077);
  ::prctl(PR_SET_NAME, "ratelimit-tls");
}

} // namespace

void run_relay(const RelaySocket& socket, const RelayTarget& target, core::Nanos timeout) {
  detach();
  int directory = ::open(socket.directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // Bound under another name, then renamed: the name never stands for a socket nobody listens
  // on, and a relay started at the same time as this one replaces it, or is replaced, whole.
  std::string bound = socket.name + "." + std::to_string(::getpid());
  std::string path = socket_path_through(directory, bound);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  struct stat mine {};
  if (directory < 0 || listener < 0 || path.size() >= sizeof address.sun_path) {
    ::_exit(0);
  }
  path.copy(address.sun_path, path.size());
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::_exit(0);
  }
  if (::listen(listener, SOMAXCONN) != 0 ||
      ::fstatat(directory, bound.c_str(), &mine, AT_SYMLINK_NOFOLLOW) != 0 ||
      ::renameat(directory, bound.c_str(), directory, socket.name.c_str()) != 0) {
    ::unlinkat(directory, bound.c_str(), 0);
    ::_exit(0);
  }
  auto remove_socket = [&] { ::unlinkat(directory, socket.name.c_str(), 0); };
  // The workers tell on this pipe when they take a connection and when they are done.
  int news[2];
  if (::pipe2(news, O_CLOEXEC) != 0) {
    remove_socket();
    ::_exit(0);
  }
  std::vector<pid_t> workers;
  std::vector<pid_t> busy;
  auto exit_relay = [&](bool unlink) {
    // No worker is busy when the relay exits idle; a removed relay's busy workers finish
    // their connection and then exit.
    for (pid_t worker : workers) {
      if (std::find(busy.begin(), busy.end(), worker) == busy.end()) {
        ::kill(worker, SIGTERM);
      }
    }
    if (unlink) {
      remove_socket();
    }
    ::_exit(0);
  };
  core::Nanos last_used = util::monotonic_nanos();
  core::Nanos last_checked = last_used;
  for (;;) {
    // A worker free for the next decision, as long as there are not too many.
    if (workers.size() == busy.size() && workers.size() < k_most_workers) {
      pid_t worker = ::fork();
      if (worker == 0) {
        ::close(news[0]);
        work(listener, news[1], target, timeout);
      }
      if (worker < 0) {
        exit_relay(true);
      }
      workers.push_back(worker);
    }
    pollfd entry{news[0], POLLIN, 0};
    int ready = ::poll(&entry, 1, k_check_every_ms);
    // A worker that died (killed, or while serving: its news never comes) is neither free
    // nor busy. Looked for once a second.
    if (core::Nanos now = util::monotonic_nanos(); now - last_checked >= k_check_every) {
      last_checked = now;
      auto dead = [](pid_t worker) { return ::kill(worker, 0) != 0 && errno == ESRCH; };
      std::erase_if(workers, dead);
      std::erase_if(busy, dead);
    }
    struct stat now {};
    if (::fstatat(directory, socket.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 ||
        !same_file(now, mine)) {
      // Removed, or replaced by another relay's: nobody can reach this one any more.
      exit_relay(false);
    }
    if (ready > 0) {
      WorkerNews told{};
      if (::read(news[0], &told, sizeof told) == sizeof told) {
        std::erase(busy, told.worker);
        if (told.busy) {
          busy.push_back(told.worker);
        }
        last_used = util::monotonic_nanos();
      }
    } else if (busy.empty() && util::monotonic_nanos() - last_used > k_relay_idle) {
      exit_relay(true);
    }
  }
}

} // namespace ratelimit::store::tls

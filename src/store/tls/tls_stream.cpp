#include "store/tls/tls_stream.hpp"

#include "store/redis/redis_errors.hpp"

#include "store/tls/openssl_library.hpp"
#include "store/tls/tls_session_cache.hpp"
#include "util/clock.hpp"

#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ratelimit::store::tls {

namespace {

// The reason of OpenSSL's oldest queued error ("certificate verify failed"), the queue
// emptied; `fallback` when there is none.
std::string openssl_reason(std::string_view fallback) {
  load_openssl_error_strings();
  unsigned long error = openssl().ERR_get_error();
  openssl().ERR_clear_error();
  const char* reason = error != 0 ? openssl().ERR_reason_error_string(error) : nullptr;
  return reason ? std::string(reason) : std::string(fallback);
}

bool is_ip_address(const std::string& host) {
  unsigned char address[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), address) == 1 ||
         inet_pton(AF_INET6, host.c_str(), address) == 1;
}

[[noreturn]] void fail(std::string message) {
  throw TlsError(TlsError::Kind::other, message);
}

} // namespace

TlsSessionIdentity TlsStream::session_identity(const std::string& host, int port,
                                               const TlsFiles& files) {
  return {host,
          port,
          is_ip_address(host) ? "" : host,
          files.ca_file.empty() ? system_trust_stamp() : file_stamp(files.ca_file),
          file_stamp(files.cert_file),
          file_stamp(files.key_file)};
}

TlsStream::TlsStream(const std::string& host, int port, const TlsFiles& files, core::Nanos timeout)
    : m_timeout(timeout) {
  core::Nanos deadline = util::monotonic_nanos() + timeout;
  try {
    m_context = openssl().SSL_CTX_new(openssl().TLS_client_method());
    if (!m_context) {
      fail("cannot set up TLS: " + openssl_reason("out of memory"));
    }
    openssl().SSL_CTX_ctrl(m_context, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
    openssl().SSL_CTX_set_verify(m_context, SSL_VERIFY_PEER, nullptr);
    bool address = is_ip_address(host);
    if (!files.session_directory.empty()) {
      m_session_cache = std::make_unique<TlsSessionCache>(
          files.session_directory, files.session_home, session_identity(host, port, files));
      // The sessions are kept in the cache's file, not in this process's memory.
      openssl().SSL_CTX_ctrl(m_context, SSL_CTRL_SET_SESS_CACHE_MODE,
                             SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE, nullptr);
      openssl().SSL_CTX_sess_set_new_cb(m_context, &TlsStream::on_new_session);
      m_offered_session = cached_session();
    }
    if (m_offered_session) {
      // A resumed handshake verifies no certificate: the CAs (the system's are some hundred
      // certificates to parse) are read only if the server makes it a full one.
      m_ca_file = files.ca_file;
      m_ca_given_by = files.ca_given_by;
      openssl().SSL_CTX_set_cert_verify_callback(m_context, &TlsStream::verify_deferred, this);
    } else {
      load_trust(files.ca_file, files.ca_given_by);
    }
    m_client_certificate = !files.cert_file.empty();
    if (m_client_certificate) {
      const std::string& key = files.key_file.empty() ? files.cert_file : files.key_file;
      if (openssl().SSL_CTX_use_certificate_chain_file(m_context, files.cert_file.c_str()) != 1) {
        fail(fmt::format("cannot read the client certificate \"{}\" ({}): {}", files.cert_file,
                         files.cert_given_by, openssl_reason("not a PEM certificate")));
      }
      if (openssl().SSL_CTX_use_PrivateKey_file(m_context, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
          openssl().SSL_CTX_check_private_key(m_context) != 1) {
        fail(fmt::format("cannot use the private key \"{}\" ({}): {}", key,
                         files.key_file.empty() ? files.cert_given_by : files.key_given_by,
                         openssl_reason("not the certificate's PEM key")));
      }
    }

    connect_tcp(host, port, deadline);

    m_ssl = openssl().SSL_new(m_context);
    if (!m_ssl || openssl().SSL_set_fd(m_ssl, m_fd) != 1 ||
        openssl().SSL_set_ex_data(m_ssl, k_stream_index, this) != 1) {
      fail("cannot set up TLS: " + openssl_reason("out of memory"));
    }
    // The name the certificate must carry, and SNI (which takes host names, not addresses).
    if (address) {
      openssl().X509_VERIFY_PARAM_set1_ip_asc(openssl().SSL_get0_param(m_ssl), host.c_str());
    } else {
      openssl().SSL_ctrl(m_ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                         const_cast<char*>(host.c_str()));
      openssl().SSL_set1_host(m_ssl, host.c_str());
    }
    if (m_offered_session) {
      openssl().SSL_set_session(m_ssl, m_offered_session);
    }
    for (;;) {
      openssl().ERR_clear_error();
      int result = openssl().SSL_connect(m_ssl);
      if (result == 1) {
        // A resumed session carries the result of the verification made with it; only a
        // session made here is saved, and only after its certificate verified.
        if (long verify = openssl().SSL_get_verify_result(m_ssl);
            openssl().SSL_session_reused(m_ssl) == 1 && verify != X509_V_OK) {
          fail_verify(verify, files);
        }
        break;
      }
      int error = openssl().SSL_get_error(m_ssl, result);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        await(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, "connect");
        continue;
      }
      if (!m_deferred_error.empty()) {
        fail(m_deferred_error);
      }
      if (long verify = openssl().SSL_get_verify_result(m_ssl); verify != X509_V_OK) {
        fail_verify(verify, files);
      }
      std::string reason = openssl_reason("");
      if (reason.empty()) {
        fail("the server closed the connection during the TLS handshake (does it demand a "
             "client certificate? see --store-cert)");
      }
      fail(fmt::format("TLS handshake failed: {} (does the server serve TLS on that port?)",
                       reason));
    }
  } catch (...) {
    // No destructor runs for a constructor that throws.
    release();
    throw;
  }
}

TlsStream::~TlsStream() {
  release();
}

void TlsStream::fail_verify(long verify, const TlsFiles& files) const {
  fail(fmt::format("the server's certificate does not verify: {} ({})",
                   openssl().X509_verify_cert_error_string(verify),
                   files.ca_file.empty()
                       ? "checked against the system's CAs; --store-ca names another CA"
                       : fmt::format("checked against {} ({})", files.ca_file, files.ca_given_by)));
}

void TlsStream::load_trust(const std::string& ca_file, const std::string& ca_given_by) {
  if (!ca_file.empty()) {
    if (openssl().SSL_CTX_load_verify_locations(m_context, ca_file.c_str(), nullptr) != 1) {
      fail(fmt::format("cannot read the CA file \"{}\" ({}): {}", ca_file, ca_given_by,
                       openssl_reason("not a PEM certificate")));
    }
  } else if (openssl().SSL_CTX_set_default_verify_paths(m_context) != 1) {
    fail("cannot read the system's CA certificates: " + openssl_reason("unknown error"));
  }
}

void TlsStream::release() {
  if (m_offered_session) {
    openssl().SSL_SESSION_free(m_offered_session);
    m_offered_session = nullptr;
  }
  if (m_new_session) {
    openssl().SSL_SESSION_free(m_new_session);
    m_new_session = nullptr;
  }
  if (m_ssl) {
    openssl().SSL_free(m_ssl);
    m_ssl = nullptr;
  }
  if (m_context) {
    openssl().SSL_CTX_free(m_context);
    m_context = nullptr;
  }
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

void TlsStream::connect_tcp(const std::string& host, int port, core::Nanos deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  std::string service = std::to_string(port);
  if (int error = getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses); error != 0) {
    throw TlsError(TlsError::Kind::unreachable,
                   fmt::format("cannot connect: {}", redis::lower_first(gai_strerror(error))));
  }
  std::string last_error = "no address";
  for (addrinfo* address = addresses; address; address = address->ai_next) {
    int fd = ::socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                      address->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    m_fd = fd;
    if (::connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = std::strerror(errno);
        ::close(fd);
        m_fd = -1;
        continue;
      }
      try {
        await(POLLOUT, deadline, "connect");
      } catch (...) {
        freeaddrinfo(addresses);
        throw;
      }
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        last_error = std::strerror(error);
        ::close(fd);
        m_fd = -1;
        continue;
      }
    }
    break;
  }
  freeaddrinfo(addresses);
  if (m_fd < 0) {
    throw TlsError(TlsError::Kind::unreachable,
                   "cannot connect: " + redis::lower_first(last_error));
  }
  // Commands are small and answered one at a time: never hold one back.
  int on = 1;
  setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

void TlsStream::await(short events, core::Nanos deadline, std::string_view what) const {
  for (;;) {
    core::Nanos left = deadline - util::monotonic_nanos();
    if (left <= 0) {
      throw TlsError(TlsError::Kind::timeout, std::string(what));
    }
    pollfd entry{m_fd, events, 0};
    int ready = ::poll(&entry, 1, static_cast<int>(core::ceil_millis(left)));
    if (ready > 0) {
      return;
    }
    if (ready < 0 && errno != EINTR) {
      fail(redis::lower_first(std::strerror(errno)));
    }
  }
}

void TlsStream::write(std::string_view bytes) {
  core::Nanos deadline = util::monotonic_nanos() + m_timeout;
  while (!bytes.empty()) {
    openssl().ERR_clear_error();
    int result = openssl().SSL_write(m_ssl, bytes.data(), static_cast<int>(bytes.size()));
    if (result > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(result));
      continue;
    }
    int error = openssl().SSL_get_error(m_ssl, result);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      await(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, "write");
      continue;
    }
    if (error == SSL_ERROR_ZERO_RETURN || error == SSL_ERROR_SYSCALL) {
      closed();
    }
    fail("TLS: " + openssl_reason("write failed"));
  }
}

std::size_t TlsStream::read(char* buffer, std::size_t size) {
  core::Nanos deadline = util::monotonic_nanos() + m_timeout;
  for (;;) {
    if (std::size_t length = read_available(buffer, size); length > 0) {
      return length;
    }
    await(POLLIN, deadline, "read");
  }
}

std::size_t TlsStream::read_available(char* buffer, std::size_t size) {
  core::Nanos deadline = util::monotonic_nanos() + m_timeout;
  for (;;) {
    openssl().ERR_clear_error();
    int result = openssl().SSL_read(m_ssl, buffer, static_cast<int>(size));
    if (result > 0) {
      m_answered = true;
      // The tickets of TLS 1.3 come before the first reply: saved once it is here.
      if (m_new_session) {
        save_new_session();
      }
      return static_cast<std::size_t>(result);
    }
    int error = openssl().SSL_get_error(m_ssl, result);
    if (error == SSL_ERROR_WANT_READ) {
      return 0;
    }
    if (error == SSL_ERROR_WANT_WRITE) {
      await(POLLOUT, deadline, "read");
      continue;
    }
    if (error == SSL_ERROR_ZERO_RETURN || error == SSL_ERROR_SYSCALL) {
      closed();
    }
    std::string reason = openssl_reason("read failed");
    // TLS 1.3 ends the handshake before the server checks the client: its refusal comes here.
    if (reason.find("certificate required") != std::string::npos) {
      fail("the server demands a client certificate (--store-cert, --store-key): " + reason);
    }
    fail("TLS: " + reason);
  }
}

void TlsStream::closed() const {
  // TLS 1.3 ends the handshake before the server checks the client's certificate: a server
  // that wants one and has none closes the connection at the first command.
  // That is a refusal, not an outage, until the server has answered once.
  if (!m_answered && !m_client_certificate) {
    throw TlsError(TlsError::Kind::other, "the server closed the connection (does it demand "
                                          "a client certificate? see --store-cert)");
  }
  throw TlsError(TlsError::Kind::closed, "the server closed the connection");
}

bool TlsStream::pending() const {
  return openssl().SSL_pending(m_ssl) > 0;
}

} // namespace ratelimit::store::tls

#pragma once

#include "core/time.hpp"
#include "store/store_url.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

struct ssl_st;
struct ssl_ctx_st;

namespace ratelimit::store {

// A failure of a TlsStream: the message says what (lower case, no prefix).
class TlsError : public std::runtime_error {
public:
  // `unreachable`: no TCP connection; `closed`: the server closed a connection it had
  // answered on (or with a client certificate given); `other`: a refusal, a bad file.
  enum class Kind { timeout, unreachable, closed, other };
  TlsError(Kind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
  Kind kind() const { return m_kind; }

private:
  Kind m_kind;
};

// A TLS client connection over TCP, blocking with deadlines: connecting (TCP and the
// handshake) gives up after `timeout`, and so does each `write` and each `read`. The server's
// certificate must verify against the CA of `files` (else the system's) and name `host`.
// OpenSSL is initialised by the first one made, never before. Throws TlsError.
class TlsStream {
public:
  TlsStream(const std::string& host, int port, const TlsFiles& files, core::Nanos timeout);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Sends all of `bytes`.
  void write(std::string_view bytes);
  // Reads what has come, at least one byte, into `buffer`; TlsError when the server closed
  // the connection.
  std::size_t read(char* buffer, std::size_t size);
  // Whether bytes already decrypted wait in the stream: poll(2) on `fd` would not see them.
  bool pending() const;
  // The socket.
  int fd() const { return m_fd; }

private:
  void release();
  // Throws the TlsError for a connection the server closed.
  [[noreturn]] void closed() const;
  void connect_tcp(const std::string& host, int port, core::Nanos deadline);
  // Waits until the socket is readable (`events` POLLIN) or writable (POLLOUT), or throws at
  // `deadline`.
  void await(short events, core::Nanos deadline, std::string_view what) const;

  core::Nanos m_timeout;
  int m_fd = -1;
  ssl_ctx_st* m_context = nullptr;
  ssl_st* m_ssl = nullptr;
  bool m_client_certificate = false;
  bool m_answered = false; // whether the server has sent anything since the handshake
};

} // namespace ratelimit::store

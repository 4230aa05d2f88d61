#pragma once

#include "core/time.hpp"
#include "store/store_url.hpp"
#include "store/tls/tls_session_cache.hpp"

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

struct ssl_st;
struct ssl_ctx_st;
struct ssl_session_st;
struct x509_store_ctx_st;

namespace ratelimit::store::tls {

class TlsSessionCache;

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
//
// With `files.session_directory`, it offers the session the last process saved for the same
// server identity (see TlsSessionCache), and saves the one the server gives it once the first
// reply has been read: with TLS 1.3 the server's tickets come after the handshake, before
// that reply, so keeping them costs no round trip. A resumed session stands for the server's
// certificate as verified when the session was made (OpenSSL does not verify it again); it is
// saved without that certificate.
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
  // The same without waiting: 0 when no byte has come (records that carry none, such as
  // TLS 1.3 tickets, are taken in).
  std::size_t read_available(char* buffer, std::size_t size);
  // Whether bytes already decrypted wait in the stream: poll(2) on `fd` would not see them.
  bool pending() const;
  // The socket.
  int fd() const { return m_fd; }

  // What a connection to `host`:`port` with `files` is made under, now: the identity of the
  // sessions it may resume (see TlsSessionIdentity), with the stamps of the files as they are.
  static TlsSessionIdentity session_identity(const std::string& host, int port,
                                             const TlsFiles& files);

private:
  void release();
  // What the server's certificate is verified against without a CA file, for the identity
  // of a session: OpenSSL's CA file and directory ($SSL_CERT_FILE, $SSL_CERT_DIR, else its
  // own), with their stamps, so that a session is not offered once the system's CAs change.
  static std::string system_trust_stamp();
  // The index of the TlsStream in its SSL's extra data (as SSL_set_app_data).
  static constexpr int k_stream_index = 0;

  // Loads the CAs to verify the server's certificate against: `ca_file`, else the system's.
  void load_trust(const std::string& ca_file, const std::string& ca_given_by);
  // OpenSSL's callback to verify the server's certificate when the CAs were not loaded (a
  // session was offered) and the handshake is a full one: loads them, then verifies.
  static int verify_deferred(x509_store_ctx_st* store, void* stream);
  // The cached session, if there is one to offer (a new reference), else null.
  ssl_session_st* cached_session();
  // Saves the session the server last gave, if it gave one since the last save.
  void save_new_session();
  // OpenSSL's callback for a new session (a TLS 1.3 ticket): keeps it for save_new_session.
  static int on_new_session(ssl_st* ssl, ssl_session_st* session);
  // Throws the TlsError for a certificate that does not verify (`verify`, OpenSSL's code).
  [[noreturn]] void fail_verify(long verify, const TlsFiles& files) const;
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
  std::unique_ptr<TlsSessionCache> m_session_cache; // null: sessions not kept
  ssl_session_st* m_new_session = nullptr;          // given by the server, not saved yet
  ssl_session_st* m_offered_session = nullptr;      // from the cache, offered to the server
  // With a session offered: the CA file to load if the handshake is a full one (empty: the
  // system's CAs), where it was named, and why loading it failed.
  std::string m_ca_file;
  std::string m_ca_given_by;
  std::string m_deferred_error;
};

} // namespace ratelimit::store::tls

// TlsStream's sessions: the one offered from the cache, and the new one saved there (see
// TlsSessionCache), with the CAs loaded only when the handshake is a full one.
#include "store/tls/tls_stream.hpp"

#include "store/tls/openssl_library.hpp"
#include "store/tls/tls_session_cache.hpp"
#include "store/tls/tls_session_der.hpp"

#include <cstdlib>
#include <ctime>
#include <fmt/format.h>
#include <optional>
#include <string>

namespace ratelimit::store::tls {

std::string TlsStream::system_trust_stamp() {
  const char* file = std::getenv(openssl().X509_get_default_cert_file_env());
  const char* directory = std::getenv(openssl().X509_get_default_cert_dir_env());
  std::string file_path = file ? file : openssl().X509_get_default_cert_file();
  std::string directory_path = directory ? directory : openssl().X509_get_default_cert_dir();
  return fmt::format("system:{}:{}:{}:{}", file_path, file_stamp(file_path), directory_path,
                     file_stamp(directory_path));
}

int TlsStream::verify_deferred(x509_store_ctx_st* store, void* stream_pointer) {
  auto* stream = static_cast<TlsStream*>(stream_pointer);
  try {
    stream->load_trust(stream->m_ca_file, stream->m_ca_given_by);
  } catch (const TlsError& error) {
    // No exception may cross OpenSSL: the handshake fails, and the constructor says why.
    stream->m_deferred_error = error.what();
    return 0;
  }
  // The store context was made from the store just filled: it finds the CAs in it.
  return openssl().X509_verify_cert(store);
}

ssl_session_st* TlsStream::cached_session() {
  std::optional<std::string> cached = m_session_cache->load();
  if (!cached) {
    return nullptr;
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(cached->data());
  const unsigned char* end = bytes + cached->size();
  SSL_SESSION* session =
      openssl().d2i_SSL_SESSION(nullptr, &bytes, static_cast<long>(cached->size()));
  openssl().ERR_clear_error();
  if (!session) {
    // A corrupt file: a full handshake, as without one.
    return nullptr;
  }
  long made = openssl().SSL_SESSION_get_time(session);
  long lifetime = openssl().SSL_SESSION_get_timeout(session);
  // A TLS 1.3 ticket lives as long as the server said (Redis: tls-session-cache-timeout),
  // which may be less than the session's own timeout; OpenSSL would not send it after.
  if (unsigned long hint = openssl().SSL_SESSION_get_ticket_lifetime_hint(session);
      hint > 0 && hint < static_cast<unsigned long>(lifetime)) {
    lifetime = static_cast<long>(hint);
  }
  // Expired: not offered. A session the server no longer knows is refused by it, and the
  // handshake is then a full one, in the same round trips.
  if (bytes == end && openssl().SSL_SESSION_is_resumable(session) == 1 && made > 0 &&
      lifetime > 0 && std::time(nullptr) < made + lifetime) {
    return session;
  }
  openssl().SSL_SESSION_free(session);
  return nullptr;
}

int TlsStream::on_new_session(ssl_st* ssl, ssl_session_st* session) {
  auto* stream = static_cast<TlsStream*>(openssl().SSL_get_ex_data(ssl, k_stream_index));
  if (!stream) {
    return 0;
  }
  if (stream->m_new_session) {
    openssl().SSL_SESSION_free(stream->m_new_session);
  }
  // Returning 1 keeps OpenSSL's reference: ours to free.
  stream->m_new_session = session;
  return 1;
}

void TlsStream::save_new_session() {
  SSL_SESSION* session = m_new_session;
  m_new_session = nullptr;
  int length = openssl().i2d_SSL_SESSION(session, nullptr);
  if (length > 0) {
    std::string bytes(static_cast<std::size_t>(length), '\0');
    auto* out = reinterpret_cast<unsigned char*>(bytes.data());
    if (openssl().i2d_SSL_SESSION(session, &out) == length) {
      m_session_cache->save(session_without_peer(bytes));
    }
  }
  openssl().SSL_SESSION_free(session);
  openssl().ERR_clear_error();
}

} // namespace ratelimit::store::tls

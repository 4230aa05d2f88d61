#include "store/tls/openssl_library.hpp"

#include "store/tls/tls_stream.hpp"

#include <cstdint>
#include <dlfcn.h>
#include <string>

namespace ratelimit::store::tls {

namespace {

// The soname of Debian 12's libssl3; libcrypto.so.3 comes with it.
constexpr const char* k_libssl = "libssl.so.3";

// Before anything else of OpenSSL runs. Its configuration (/etc/ssl/openssl.cnf, or
// $OPENSSL_CONF) is still read: it may set the system's TLS policy. Left out, for a process
// that makes one connection (each item cost about what a resumed handshake does):
// - freeing everything at exit (OPENSSL_cleanup, from atexit): the process is ending;
// - libssl's error messages, which SSL_CTX_new loads by default: they are loaded when an
//   error is to be told (load_openssl_error_strings);
// - the table of every cipher and digest by its legacy name (EVP_get_digestbyname), which
//   OpenSSL 3 fills and then copies into the names its providers' algorithms are fetched by.
//   It finds algorithms through the providers. The one legacy lookup a client makes is for
//   the digests that the parameters of an RSA-PSS signature name, in a certificate chain:
//   those (SHA-1, SHA-2, SHA-3) are registered here.
void initialise(const OpenSslLibrary& library) {
  constexpr std::uint64_t k_options = OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_NO_LOAD_SSL_STRINGS |
                                      OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                                      OPENSSL_INIT_NO_ADD_ALL_DIGESTS;
  if (library.OPENSSL_init_ssl(k_options, nullptr) != 1) {
    throw TlsError(TlsError::Kind::other, "rediss://: cannot initialise OpenSSL");
  }
  for (auto digest :
       {library.EVP_sha1, library.EVP_sha224, library.EVP_sha256, library.EVP_sha384,
        library.EVP_sha512, library.EVP_sha512_224, library.EVP_sha512_256, library.EVP_sha3_224,
        library.EVP_sha3_256, library.EVP_sha3_384, library.EVP_sha3_512}) {
    library.EVP_add_digest(digest());
  }
}

OpenSslLibrary load() {
  void* handle = dlopen(k_libssl, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw TlsError(TlsError::Kind::other,
                   std::string("rediss:// needs OpenSSL 3 (Debian: apt-get install libssl3): ") +
                       (why ? why : "cannot load " + std::string(k_libssl)));
  }
  OpenSslLibrary library;
  // dlsym on the handle also finds libcrypto's functions: a dependency loaded with it.
#define RATELIMIT_OPENSSL_FUNCTION(name)                                                           \
  library.name = reinterpret_cast<decltype(library.name)>(dlsym(handle, #name));                   \
  if (!library.name) {                                                                             \
    throw TlsError(TlsError::Kind::other,                                                          \
                   std::string("rediss://: ") + k_libssl + " has no " + #name);                    \
  }
#include "store/tls/openssl_functions.inc"
#undef RATELIMIT_OPENSSL_FUNCTION
  // Absent from an OpenSSL built without the deprecated functions: the messages then say
  // less, nothing else changes.
  library.load_ssl_error_strings =
      reinterpret_cast<int (*)()>(dlsym(handle, "ERR_load_SSL_strings"));
  initialise(library);
  return library;
}

} // namespace

const OpenSslLibrary& openssl() {
  static const OpenSslLibrary library = load();
  return library;
}

void load_openssl_error_strings() {
  static const bool loaded = [] {
    if (openssl().load_ssl_error_strings) {
      openssl().load_ssl_error_strings();
    }
    return true;
  }();
  (void)loaded;
}

} // namespace ratelimit::store::tls

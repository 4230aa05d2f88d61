#include "store/openssl_library.hpp"

#include "store/tls_stream.hpp"

#include <dlfcn.h>
#include <string>

namespace ratelimit::store {

namespace {

// The soname of Debian 12's libssl3; libcrypto.so.3 comes with it.
constexpr const char* k_libssl = "libssl.so.3";

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
#include "store/openssl_functions.inc"
#undef RATELIMIT_OPENSSL_FUNCTION
  // Absent from an OpenSSL built without the deprecated functions: the messages then say
  // less, nothing else changes.
  library.load_ssl_error_strings =
      reinterpret_cast<int (*)()>(dlsym(handle, "ERR_load_SSL_strings"));
  // Before anything else of OpenSSL runs. Its configuration (/etc/ssl/openssl.cnf, or
  // $OPENSSL_CONF) is still read: it may set the system's TLS policy. Not done:
  // - freeing everything at exit (OPENSSL_cleanup, from atexit): the process is ending, and
  //   that took as long as making a resumed handshake;
  // - loading the libssl error messages, which SSL_CTX_new does by default and which cost as
  //   much: they are loaded when an error is to be told (openssl_error_strings).
  if (library.OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_NO_LOAD_SSL_STRINGS,
                               nullptr) != 1) {
    throw TlsError(TlsError::Kind::other, "rediss://: cannot initialise OpenSSL");
  }
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

} // namespace ratelimit::store

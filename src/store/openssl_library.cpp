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
  return library;
}

} // namespace

const OpenSslLibrary& openssl() {
  static const OpenSslLibrary library = load();
  return library;
}

} // namespace ratelimit::store

#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace ratelimit::store::tls {

// The OpenSSL functions that rediss:// uses, from libssl.so.3 (and the libcrypto.so.3 it
// loads), opened with dlopen(3) at the first TLS connection: a process on another store
// neither loads nor initialises OpenSSL, and pays nothing for it at start-up.
struct OpenSslLibrary {
#define RATELIMIT_OPENSSL_FUNCTION(name) decltype(&::name) name = nullptr;
#include "store/tls/openssl_functions.inc"
#undef RATELIMIT_OPENSSL_FUNCTION
  // ERR_load_SSL_strings, deprecated since OpenSSL 3.0 (so not declared for decltype), or
  // null.
  int (*load_ssl_error_strings)() = nullptr;
};

// The library, loaded and initialised at the first call; throws TlsError when it cannot be.
const OpenSslLibrary& openssl();

// Loads libssl's error messages, which the initialisation leaves out: for the reason of an
// error, before ERR_reason_error_string.
void load_openssl_error_strings();

} // namespace ratelimit::store::tls

/* The floor of a rediss:// decision made by a process of its own: what loading OpenSSL 3
 * costs before any connection. Loads libssl.so.3 as ratelimit does (dlopen, at the first TLS
 * connection), then up to STAGE: 1 nothing more, 2 OPENSSL_init_ssl with ratelimit's options
 * (src/store/tls/openssl_library.cpp), 3 also SSL_CTX_new.
 *
 *   openssl_floor STAGE      exit 0, or 1 when a stage fails */
#include <dlfcn.h>
#include <openssl/ssl.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int stage = argc > 1 ? atoi(argv[1]) : 3;
  void* handle = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return 1;
  }
  if (stage >= 2) {
    int (*init)(uint64_t, const OPENSSL_INIT_SETTINGS*) =
        (int (*)(uint64_t, const OPENSSL_INIT_SETTINGS*))dlsym(handle, "OPENSSL_init_ssl");
    if (init(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_NO_LOAD_SSL_STRINGS |
                 OPENSSL_INIT_NO_ADD_ALL_CIPHERS | OPENSSL_INIT_NO_ADD_ALL_DIGESTS,
             NULL) != 1) {
      return 1;
    }
  }
  if (stage >= 3) {
    const SSL_METHOD* (*method)(void) =
        (const SSL_METHOD* (*)(void))dlsym(handle, "TLS_client_method");
    SSL_CTX* (*context)(const SSL_METHOD*) =
        (SSL_CTX * (*)(const SSL_METHOD*)) dlsym(handle, "SSL_CTX_new");
    if (!context(method())) {
      return 1;
    }
  }
  return 0;
}

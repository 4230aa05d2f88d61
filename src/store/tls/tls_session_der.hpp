#pragma once

#include <string>
#include <string_view>

namespace ratelimit::store::tls {

// `session`, OpenSSL's DER encoding of a TLS session (the SEQUENCE of ssl/ssl_asn1.c),
// without the server's certificate (its field [3]); `session` itself when it is not such a
// SEQUENCE. The certificate was verified when the session was made, and resuming does not
// use it; decoding it is what makes reading a session costly: the first public key OpenSSL
// decodes sets up its decoders, a third of what a resumed handshake costs otherwise.
std::string session_without_peer(std::string_view session);

} // namespace ratelimit::store::tls

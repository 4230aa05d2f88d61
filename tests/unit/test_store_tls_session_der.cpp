#include "store/tls/tls_session_der.hpp"

#include <doctest/doctest.h>
#include <string>

using ratelimit::store::tls::session_without_peer;

namespace {

// An element of DER with a one-byte tag: `tag`, its length (as short as DER has it),
// `contents`.
std::string element(unsigned char tag, const std::string& contents) {
  std::string out(1, static_cast<char>(tag));
  if (contents.size() < 0x80) {
    out.push_back(static_cast<char>(contents.size()));
  } else if (contents.size() < 0x100) {
    out.push_back(static_cast<char>(0x81));
    out.push_back(static_cast<char>(contents.size()));
  } else {
    out.push_back(static_cast<char>(0x82));
    out.push_back(static_cast<char>(contents.size() >> 8));
    out.push_back(static_cast<char>(contents.size() & 0xff));
  }
  return out + contents;
}

std::string integer(char value) {
  return element(0x02, std::string(1, value));
}

} // namespace

TEST_CASE("store::tls::session_without_peer drops the field [3], the server's certificate") {
  std::string before = integer(1) + element(0x04, "ab") + element(0xa1, integer(7));
  std::string after = element(0xa4, element(0x04, "ctx")) + element(0xa5, integer(0));
  // A certificate of a few hundred bytes: lengths in long form, outside and inside.
  std::string certificate = element(0xa3, element(0x30, std::string(300, 'c')));
  std::string session = element(0x30, before + certificate + after);
  CHECK(session_without_peer(session) == element(0x30, before + after));
  // A long session keeps its long form, with the length it has now.
  std::string long_field = element(0x04, std::string(200, 't'));
  CHECK(session_without_peer(element(0x30, before + certificate + long_field)) ==
        element(0x30, before + long_field));
  // Without a certificate, nothing changes.
  CHECK(session_without_peer(element(0x30, before + after)) == element(0x30, before + after));
}

TEST_CASE("store::tls::session_without_peer leaves alone what is not a session's DER") {
  std::string field = integer(1) + element(0xa3, integer(2));
  for (const std::string& odd : {
           std::string(), element(0x31, field),           // a SET, not a SEQUENCE
           element(0x30, field) + "x",                    // bytes after it
           element(0x30, field).substr(0, 6),             // cut short
           element(0x30, integer(1) + "\x02\x05\x01"),    // a field cut short
           element(0x30, std::string("\x1f\x01\x00", 3)), // a tag of several bytes
       }) {
    CHECK(session_without_peer(odd) == odd);
  }
}

#include "store/tls/tls_session_der.hpp"

#include <cstddef>
#include <optional>

namespace ratelimit::store::tls {

namespace {

constexpr unsigned char k_sequence = 0x30;
// [3] EXPLICIT, constructed: the peer's certificate.
constexpr unsigned char k_peer = 0xa3;

// One element of DER: its tag, and where its contents are in the bytes read.
struct Element {
  unsigned char tag = 0;
  std::size_t contents = 0; // offset of the contents
  std::size_t length = 0;   // of the contents
  std::size_t end = 0;      // offset past the element
};

// The element at `offset` of `der`, if one is whole there in DER (a one-byte tag, a length of
// at most four bytes).
std::optional<Element> element_at(std::string_view der, std::size_t offset) {
  if (der.size() - offset < 2) {
    return std::nullopt;
  }
  Element element;
  element.tag = static_cast<unsigned char>(der[offset]);
  if ((element.tag & 0x1f) == 0x1f) {
    return std::nullopt; // a tag of more than one byte: not in a session
  }
  auto first = static_cast<unsigned char>(der[offset + 1]);
  std::size_t position = offset + 2;
  if (first < 0x80) {
    element.length = first;
  } else {
    std::size_t bytes = first & 0x7f;
    if (bytes == 0 || bytes > 4 || der.size() - position < bytes) {
      return std::nullopt;
    }
    for (std::size_t i = 0; i < bytes; ++i) {
      element.length = (element.length << 8) | static_cast<unsigned char>(der[position + i]);
    }
    position += bytes;
  }
  if (der.size() - position < element.length) {
    return std::nullopt;
  }
  element.contents = position;
  element.end = position + element.length;
  return element;
}

void append_length(std::string& out, std::size_t length) {
  if (length < 0x80) {
    out.push_back(static_cast<char>(length));
    return;
  }
  std::string bytes;
  for (; length > 0; length >>= 8) {
    bytes.insert(bytes.begin(), static_cast<char>(length & 0xff));
  }
  out.push_back(static_cast<char>(0x80 | bytes.size()));
  out += bytes;
}

} // namespace

std::string session_without_peer(std::string_view session) {
  std::optional<Element> outer = element_at(session, 0);
  if (!outer || outer->tag != k_sequence || outer->end != session.size()) {
    return std::string(session);
  }
  std::string fields;
  for (std::size_t offset = outer->contents; offset < outer->end;) {
    std::optional<Element> field = element_at(session.substr(0, outer->end), offset);
    if (!field) {
      return std::string(session);
    }
    if (field->tag != k_peer) {
      fields += session.substr(offset, field->end - offset);
    }
    offset = field->end;
  }
  std::string out(1, static_cast<char>(k_sequence));
  append_length(out, fields.size());
  return out + fields;
}

} // namespace ratelimit::store::tls

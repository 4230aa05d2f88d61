#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/types.h>

namespace ratelimit::store::tls {

// What a TLS session is bound to: a session resumed skips the server's certificate, its
// chain and its name, which were checked when the session was made, and the client's
// certificate, which the server checked then. So a session is offered only to the same
// server, reached by the same name, trusted through the same CA file, with the same client
// certificate and key.
struct TlsSessionIdentity {
  std::string host;
  int port = 0;
  std::string server_name; // SNI and the name checked; empty for an IP address
  // Each file's stamp (`file_stamp`), "-" when none is given: a file replaced or changed
  // makes another identity, so its sessions are not offered any more. Without a CA file, the
  // system's CA file and directory, with their stamps.
  std::string ca;
  std::string cert;
  std::string key;
};

// The identity as one line, its fields separated by tabs, stored in the session's file and
// compared when it is read.
// Nullopt when a field holds a control character (no such host can be connected to).
std::optional<std::string> identity_text(const TlsSessionIdentity& identity);

// The file name of the identity's session: `HOST-PORT-HASH.tls`, the host with any
// character but letters, digits, `.` and `-` as `_`, HASH sixteen hex digits of
// `identity_text` (FNV-1a, 64 bits). Two identities that share a name are told apart by
// the identity inside the file.
std::string session_file_name(const TlsSessionIdentity& identity);

// A file's stamp: `DEV:INODE:SIZE:MTIME_NS`, or "-" for an empty path or one that cannot be
// stat(2)ed (the TLS set-up then fails anyway).
std::string file_stamp(const std::string& path);

// Whether a cache file or directory may be used, from its lstat(2)/fstat(2) facts.
enum class CacheEntryCheck {
  usable,
  wrong_type,     // not a regular file (a directory for the directory), e.g. a symlink
  other_owner,    // not owned by `user`
  open_to_others, // a file with any group or other permission; a directory writable by them
};
CacheEntryCheck check_cache_file(const struct stat& info, uid_t user);
CacheEntryCheck check_cache_directory(const struct stat& info, uid_t user);

// Makes `directory` as the cache makes it when missing (see TlsSessionCache); whether it may be
// used then.
bool make_cache_directory(const std::string& directory, const std::string& home);

// A session file: a header line with the format version, `identity` (from `identity_text`)
// on a line, then the session as OpenSSL's DER encoding.
std::string encode_session_file(std::string_view identity, std::string_view session);
// The DER session in `content`, or nullopt when it is not a file of this format or is for
// another identity.
std::optional<std::string> decode_session_file(std::string_view content, std::string_view identity);

// The TLS sessions of one server identity in `directory`, one file (see above) of mode 0600,
// replaced atomically. Nothing here fails: a file that is missing, cannot be read, is not
// ours, is open to others or is corrupt is not used, and a session that cannot be saved is
// not saved. `directory` is created (0700) when it is missing, and so is its parent, the
// state directory, unless it is in a `home` directory that does not exist.
class TlsSessionCache {
public:
  TlsSessionCache(std::string directory, std::string home, const TlsSessionIdentity& identity);

  // The session last saved, in DER; nullopt when there is none to use.
  std::optional<std::string> load() const;
  // Saves `session` (DER) in place of the last one.
  void save(std::string_view session) const;

  // The file, for messages and tests.
  const std::string& path() const { return m_path; }

private:
  std::string m_directory;
  std::string m_home;
  std::string m_path;
  std::optional<std::string> m_identity;
};

} // namespace ratelimit::store::tls

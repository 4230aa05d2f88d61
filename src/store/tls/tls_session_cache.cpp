#include "store/tls/tls_session_cache.hpp"

#include "util/atomic_file.hpp"
#include "util/paths.hpp"

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace ratelimit::store::tls {

namespace {

constexpr std::string_view k_header = "ratelimit TLS session 1\n";
// A session holds the server's certificate: a few KiB. A larger file is not one of ours.
constexpr std::size_t k_largest_file = 64 * 1024;

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

bool has_control_character(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return true;
    }
  }
  return false;
}

// The cache directory, made private when missing; whether it may be used.
bool usable_directory(const std::string& directory, const std::string& home, bool create) {
  struct stat info {};
  if (::lstat(directory.c_str(), &info) != 0) {
    if (errno != ENOENT || !create) {
      return false;
    }
    struct stat home_info {};
    if (!home.empty() && (::stat(home.c_str(), &home_info) != 0 || !S_ISDIR(home_info.st_mode))) {
      return false;
    }
    try {
      util::make_directories(util::parent_directory(directory), 0700);
    } catch (const std::runtime_error&) {
      return false;
    }
    if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
      return false;
    }
    if (::lstat(directory.c_str(), &info) != 0) {
      return false;
    }
  }
  return check_cache_directory(info, ::geteuid()) == CacheEntryCheck::usable;
}

} // namespace

bool make_cache_directory(const std::string& directory, const std::string& home) {
  return usable_directory(directory, home, true);
}

std::optional<std::string> identity_text(const TlsSessionIdentity& identity) {
  for (const std::string* field :
       {&identity.host, &identity.server_name, &identity.ca, &identity.cert, &identity.key}) {
    if (has_control_character(*field)) {
      return std::nullopt;
    }
  }
  // Tabs between the fields, which hold none: two identities never make the same text.
  return fmt::format("port={}\tca={}\tcert={}\tkey={}\thost={}\tsni={}", identity.port, identity.ca,
                     identity.cert, identity.key, identity.host, identity.server_name);
}

std::string session_file_name(const TlsSessionIdentity& identity) {
  std::string host;
  for (char c : identity.host.substr(0, 64)) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '-';
    host += plain ? c : '_';
  }
  return fmt::format("{}-{}-{:016x}.tls", host, identity.port,
                     fnv1a(identity_text(identity).value_or("")));
}

std::string file_stamp(const std::string& path) {
  struct stat info {};
  if (path.empty() || ::stat(path.c_str(), &info) != 0) {
    return "-";
  }
  return fmt::format(
      "{}:{}:{}:{}", static_cast<std::uint64_t>(info.st_dev),
      static_cast<std::uint64_t>(info.st_ino), static_cast<std::int64_t>(info.st_size),
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec);
}

CacheEntryCheck check_cache_file(const struct stat& info, uid_t user) {
  if (!S_ISREG(info.st_mode)) {
    return CacheEntryCheck::wrong_type;
  }
  if (info.st_uid != user) {
    return CacheEntryCheck::other_owner;
  }
  // It holds the session's secret: another user who reads it could pose as us to the server
  // until the session expires, and one who writes it could choose which server we trust.
  if ((info.st_mode & 077) != 0) {
    return CacheEntryCheck::open_to_others;
  }
  return CacheEntryCheck::usable;
}

CacheEntryCheck check_cache_directory(const struct stat& info, uid_t user) {
  if (!S_ISDIR(info.st_mode)) {
    return CacheEntryCheck::wrong_type;
  }
  if (info.st_uid != user) {
    return CacheEntryCheck::other_owner;
  }
  // Another user who may write in it could put a file of their own in place of ours.
  if ((info.st_mode & 022) != 0) {
    return CacheEntryCheck::open_to_others;
  }
  return CacheEntryCheck::usable;
}

std::string encode_session_file(std::string_view identity, std::string_view session) {
  std::string content(k_header);
  content.append(identity);
  content += '\n';
  content.append(session);
  return content;
}

std::optional<std::string> decode_session_file(std::string_view content,
                                               std::string_view identity) {
  if (!content.starts_with(k_header)) {
    return std::nullopt;
  }
  content.remove_prefix(k_header.size());
  if (content.size() <= identity.size() || !content.starts_with(identity) ||
      content[identity.size()] != '\n') {
    return std::nullopt;
  }
  content.remove_prefix(identity.size() + 1);
  if (content.empty()) {
    return std::nullopt;
  }
  return std::string(content);
}

TlsSessionCache::TlsSessionCache(std::string directory, std::string home,
                                 const TlsSessionIdentity& identity)
    : m_directory(std::move(directory)), m_home(std::move(home)),
      m_path(m_directory + "/" + session_file_name(identity)), m_identity(identity_text(identity)) {
}

std::optional<std::string> TlsSessionCache::load() const {
  if (!m_identity || !usable_directory(m_directory, m_home, false)) {
    return std::nullopt;
  }
  // O_NOFOLLOW: a symlink in its place is not followed, to another user's file or any other.
  // O_NONBLOCK: a FIFO in its place does not hang the decision.
  int fd = ::open(m_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string content;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && check_cache_file(info, ::geteuid()) == CacheEntryCheck::usable &&
      static_cast<std::size_t>(info.st_size) <= k_largest_file) {
    content.resize(static_cast<std::size_t>(info.st_size));
    std::size_t done = 0;
    while (done < content.size()) {
      ssize_t got = ::read(fd, content.data() + done, content.size() - done);
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got <= 0) {
        break;
      }
      done += static_cast<std::size_t>(got);
    }
    content.resize(done);
  }
  ::close(fd);
  return decode_session_file(content, *m_identity);
}

void TlsSessionCache::save(std::string_view session) const {
  if (!m_identity || !usable_directory(m_directory, m_home, true)) {
    return;
  }
  // Not flushed to the disk: after a crash, a file cut short is not decoded, and the next
  // process makes a full handshake.
  util::replace_file(m_path, encode_session_file(*m_identity, session), {0600, false});
}

} // namespace ratelimit::store::tls

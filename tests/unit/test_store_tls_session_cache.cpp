#include "store/tls/tls_session_cache.hpp"

#include "temporary_database.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace ratelimit;
using store::tls::CacheEntryCheck;
using store::tls::TlsSessionIdentity;

namespace {

TlsSessionIdentity identity() {
  return {"redis.example.com", 6380, "redis.example.com", "1:2:300:4", "-", "-"};
}

struct stat facts(mode_t mode, uid_t owner) {
  struct stat info {};
  info.st_mode = mode;
  info.st_uid = owner;
  return info;
}

void write(const std::filesystem::path& file, const std::string& content, mode_t mode) {
  std::ofstream(file, std::ios::binary) << content;
  REQUIRE(::chmod(file.c_str(), mode) == 0);
}

} // namespace

TEST_CASE("store::tls::session_file_name names the host and port, and hashes the whole identity") {
  std::string name = store::tls::session_file_name(identity());
  CHECK(name.starts_with("redis.example.com-6380-"));
  CHECK(name.ends_with(".tls"));
  CHECK(name.size() == std::string("redis.example.com-6380-").size() + 16 + 4);
  CHECK(store::tls::session_file_name(identity()) == name);
  // Each part of the identity makes another file: a session is never offered to another
  // server, by another name, trusted through another CA, or with another client identity.
  auto differs = [&](auto change) {
    TlsSessionIdentity other = identity();
    change(other);
    return store::tls::session_file_name(other) != name;
  };
  CHECK(differs([](TlsSessionIdentity& i) { i.host = "other.example.com"; }));
  CHECK(differs([](TlsSessionIdentity& i) { i.port = 6381; }));
  CHECK(differs([](TlsSessionIdentity& i) { i.server_name = ""; }));
  CHECK(differs([](TlsSessionIdentity& i) { i.ca = "1:2:300:5"; }));
  CHECK(differs([](TlsSessionIdentity& i) { i.cert = "1:3:100:4"; }));
  CHECK(differs([](TlsSessionIdentity& i) { i.key = "1:4:100:4"; }));
  // Only safe characters from the host: an IPv6 address, or a name with a slash.
  CHECK(store::tls::session_file_name({"::1", 6379, "", "-", "-", "-"}).starts_with("__1-6379-"));
  CHECK(store::tls::session_file_name({"a/../b", 1, "", "-", "-", "-"}).starts_with("a_.._b-1-"));
}

TEST_CASE("store::tls::identity_text holds every field, and refuses control characters") {
  CHECK(store::tls::identity_text(identity()) ==
        "port=6380\tca=1:2:300:4\tcert=-\tkey=-\thost=redis.example.com\tsni=redis.example.com");
  TlsSessionIdentity odd = identity();
  odd.host = "a\nb";
  CHECK_FALSE(store::tls::identity_text(odd));
  odd.host = "a\tsni=b";
  CHECK_FALSE(store::tls::identity_text(odd));
}

TEST_CASE("store::tls::file_stamp changes when the file is replaced or changed") {
  test::TemporaryDirectory directory;
  std::filesystem::path file = directory.path / "ca.pem";
  CHECK(store::tls::file_stamp("") == "-");
  CHECK(store::tls::file_stamp(file) == "-");
  write(file, "one", 0644);
  std::string first = store::tls::file_stamp(file);
  CHECK(first != "-");
  CHECK(store::tls::file_stamp(file) == first);
  std::filesystem::path replacement = directory.path / "new.pem";
  write(replacement, "two", 0644);
  std::filesystem::rename(replacement, file);
  CHECK(store::tls::file_stamp(file) != first);
}

TEST_CASE("store::tls::check_cache_file takes a regular file of the user's, closed to others") {
  CHECK(store::tls::check_cache_file(facts(S_IFREG | 0600, 1000), 1000) == CacheEntryCheck::usable);
  CHECK(store::tls::check_cache_file(facts(S_IFREG | 0400, 1000), 1000) == CacheEntryCheck::usable);
  CHECK(store::tls::check_cache_file(facts(S_IFREG | 0600, 1001), 1000) ==
        CacheEntryCheck::other_owner);
  CHECK(store::tls::check_cache_file(facts(S_IFREG | 0600, 0), 1000) ==
        CacheEntryCheck::other_owner);
  CHECK(store::tls::check_cache_file(facts(S_IFREG | 0640, 1000), 1000) ==
        CacheEntryCheck::open_to_others);
  CHECK(store::tls::check_cache_file(facts(S_IFREG | 0604, 1000), 1000) ==
        CacheEntryCheck::open_to_others);
  CHECK(store::tls::check_cache_file(facts(S_IFREG | 0610, 1000), 1000) ==
        CacheEntryCheck::open_to_others);
  CHECK(store::tls::check_cache_file(facts(S_IFLNK | 0777, 1000), 1000) ==
        CacheEntryCheck::wrong_type);
  CHECK(store::tls::check_cache_file(facts(S_IFIFO | 0600, 1000), 1000) ==
        CacheEntryCheck::wrong_type);
  CHECK(store::tls::check_cache_file(facts(S_IFDIR | 0700, 1000), 1000) ==
        CacheEntryCheck::wrong_type);
}

TEST_CASE("store::tls::check_cache_directory takes a directory of the user's that others cannot "
          "write in") {
  CHECK(store::tls::check_cache_directory(facts(S_IFDIR | 0700, 1000), 1000) ==
        CacheEntryCheck::usable);
  CHECK(store::tls::check_cache_directory(facts(S_IFDIR | 0755, 1000), 1000) ==
        CacheEntryCheck::usable);
  CHECK(store::tls::check_cache_directory(facts(S_IFDIR | 0770, 1000), 1000) ==
        CacheEntryCheck::open_to_others);
  CHECK(store::tls::check_cache_directory(facts(S_IFDIR | 01777, 1000), 1000) ==
        CacheEntryCheck::open_to_others);
  CHECK(store::tls::check_cache_directory(facts(S_IFDIR | 0700, 0), 1000) ==
        CacheEntryCheck::other_owner);
  CHECK(store::tls::check_cache_directory(facts(S_IFLNK | 0777, 1000), 1000) ==
        CacheEntryCheck::wrong_type);
}

TEST_CASE("store::tls::decode_session_file gives back the session of the same identity only") {
  std::string session("\x30\x82\x01\x00\n\0binary", 12);
  std::string file = store::tls::encode_session_file("id one", session);
  CHECK(store::tls::decode_session_file(file, "id one") == session);
  CHECK_FALSE(store::tls::decode_session_file(file, "id two"));
  CHECK_FALSE(store::tls::decode_session_file(file, "id on"));
  CHECK_FALSE(store::tls::decode_session_file(file, "id one "));
  CHECK_FALSE(store::tls::decode_session_file("", "id one"));
  CHECK_FALSE(
      store::tls::decode_session_file(store::tls::encode_session_file("id one", ""), "id one"));
  CHECK_FALSE(store::tls::decode_session_file("garbage" + file, "id one"));
  // Cut short in the header.
  CHECK_FALSE(store::tls::decode_session_file(file.substr(0, 10), "id one"));
}

TEST_CASE(
    "store::tls::TlsSessionCache saves with mode 0600 and loads back, in a directory it makes "
    "private") {
  test::TemporaryDirectory state;
  std::string directory = (state.path / "ratelimit" / "tls-sessions").string();
  store::tls::TlsSessionCache cache(directory, "", identity());
  CHECK_FALSE(cache.load());
  cache.save("session one");
  struct stat info {};
  REQUIRE(::stat(cache.path().c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0600);
  REQUIRE(::stat(directory.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0700);
  REQUIRE(::stat((state.path / "ratelimit").c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0700);
  CHECK(cache.load() == "session one");
  cache.save("session two");
  CHECK(cache.load() == "session two");
  // Nothing left beside it.
  CHECK(std::distance(std::filesystem::directory_iterator(directory),
                      std::filesystem::directory_iterator()) == 1);
  // Another identity does not read it, even from the same file.
  TlsSessionIdentity other = identity();
  other.ca = "9:9:9:9";
  store::tls::TlsSessionCache another(directory, "", other);
  CHECK_FALSE(another.load());
  std::filesystem::copy_file(cache.path(), another.path());
  CHECK_FALSE(another.load());
}

TEST_CASE("store::tls::TlsSessionCache ignores a file open to others, a symlink and a directory "
          "others may write in") {
  test::TemporaryDirectory state;
  std::string directory = (state.path / "tls-sessions").string();
  store::tls::TlsSessionCache cache(directory, "", identity());
  cache.save("secret");
  REQUIRE(cache.load() == "secret");
  SUBCASE("readable by the group") {
    REQUIRE(::chmod(cache.path().c_str(), 0640) == 0);
    CHECK_FALSE(cache.load());
  }
  SUBCASE("a symlink to a file of the right content") {
    std::string target = (state.path / "elsewhere").string();
    std::filesystem::rename(cache.path(), target);
    std::filesystem::create_symlink(target, cache.path());
    CHECK_FALSE(cache.load());
  }
  SUBCASE("the directory writable by others") {
    REQUIRE(::chmod(directory.c_str(), 0777) == 0);
    CHECK_FALSE(cache.load());
    // Nor is anything saved there.
    cache.save("new");
    REQUIRE(::chmod(directory.c_str(), 0700) == 0);
    CHECK(cache.load() == "secret");
  }
  SUBCASE("corrupt") {
    write(cache.path(), test::file_contents(cache.path()).substr(0, 20), 0600);
    CHECK_FALSE(cache.load());
  }
  if (::geteuid() == 0) {
    SUBCASE("another user's") {
      REQUIRE(::chown(cache.path().c_str(), 65534, 65534) == 0);
      CHECK_FALSE(cache.load());
    }
  }
}

TEST_CASE("store::tls::TlsSessionCache never makes a home directory that is missing") {
  test::TemporaryDirectory state;
  std::string home = (state.path / "missing-home").string();
  store::tls::TlsSessionCache cache(home + "/.local/state/ratelimit/tls-sessions", home,
                                    identity());
  cache.save("session");
  CHECK_FALSE(std::filesystem::exists(home));
  CHECK_FALSE(cache.load());
}

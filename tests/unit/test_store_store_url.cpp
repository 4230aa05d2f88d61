#include "store/store_url.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::store;

namespace {

RedisLocation redis(std::string_view url) {
  auto parsed = parse_store_url(url);
  REQUIRE_MESSAGE(parsed.ok(), parsed.error());
  REQUIRE(std::holds_alternative<RedisLocation>(*parsed));
  return std::get<RedisLocation>(*parsed);
}

std::string error_of(std::string_view url) {
  auto parsed = parse_store_url(url);
  REQUIRE_FALSE(parsed.ok());
  return parsed.error();
}

} // namespace

TEST_CASE("store::parse_store_url reads a bare redis host with the defaults") {
  RedisLocation location = redis("redis://cache.internal");
  CHECK(location.host == "cache.internal");
  CHECK(location.port == 6379);
  CHECK(location.password.empty());
  CHECK(location.user.empty());
  CHECK(location.db == 0);
  CHECK(location.address() == "cache.internal:6379");
}

TEST_CASE("store::parse_store_url reads a password, a port and a database") {
  RedisLocation location = redis("redis://:s3cret@10.0.0.5:6380/2");
  CHECK(location.host == "10.0.0.5");
  CHECK(location.port == 6380);
  CHECK(location.password == "s3cret");
  CHECK(location.user.empty());
  CHECK(location.db == 2);
}

TEST_CASE("store::parse_store_url reads an ACL user and percent-escaped password") {
  RedisLocation location = redis("redis://limiter:p%40ss%2Fword@localhost/");
  CHECK(location.user == "limiter");
  CHECK(location.password == "p@ss/word");
  CHECK(location.host == "localhost");
  CHECK(location.db == 0);
}

TEST_CASE("store::parse_store_url reads a user whose password is given elsewhere") {
  RedisLocation location = redis("redis://limiter@host");
  CHECK(location.user == "limiter");
  CHECK(location.password.empty());
}

TEST_CASE("store::parse_store_url reads rediss:// as redis:// over TLS") {
  RedisLocation location = redis("rediss://:pw@cache.example.com:6380/1");
  CHECK(location.tls);
  CHECK(location.host == "cache.example.com");
  CHECK(location.port == 6380);
  CHECK(location.password == "pw");
  CHECK(location.db == 1);
  CHECK_FALSE(redis("redis://cache").tls);
  CHECK(redis("rediss://[::1]").host == "::1");
}

TEST_CASE("store::parse_store_url splits the password at the last @") {
  RedisLocation location = redis("redis://:a@b@host");
  CHECK(location.password == "a@b");
  CHECK(location.host == "host");
}

TEST_CASE("store::parse_store_url reads an IPv6 host in brackets") {
  RedisLocation location = redis("redis://[::1]:7000");
  CHECK(location.host == "::1");
  CHECK(location.port == 7000);
  CHECK(location.address() == "[::1]:7000");
  CHECK(redis("redis://[::1]").port == 6379);
}

TEST_CASE("store::parse_store_url reads host names with '-', '_' and '.', and IPv4 addresses") {
  CHECK(redis("redis://cache-1.eu_west.example.com:6380").host == "cache-1.eu_west.example.com");
  CHECK(redis("redis://10.0.0.5").host == "10.0.0.5");
  CHECK(redis("redis://[::ffff:10.0.0.5]").host == "::ffff:10.0.0.5");
  CHECK(redis("redis://[2001:DB8::a]").host == "2001:DB8::a");
}

TEST_CASE("store::parse_store_url reads a Unix socket's path") {
  RedisLocation location = redis("unix:///run/redis/redis.sock");
  CHECK(location.socket_path == "/run/redis/redis.sock");
  CHECK(location.host.empty());
  CHECK(location.password.empty());
  CHECK(location.db == 0);
  CHECK(location.address() == "/run/redis/redis.sock");
}

TEST_CASE("store::parse_store_url reads a Unix socket with a password and a database") {
  RedisLocation location = redis("unix://limiter:p%40ss@/tmp/my%20redis.sock?db=3");
  CHECK(location.socket_path == "/tmp/my redis.sock");
  CHECK(location.user == "limiter");
  CHECK(location.password == "p@ss");
  CHECK(location.db == 3);
  CHECK(redis("unix://:pw@/r.sock").password == "pw");
}

TEST_CASE("store::parse_store_url reads sqlite:PATH") {
  auto parsed = parse_store_url("sqlite:/var/lib/app/limits.db");
  REQUIRE(parsed.ok());
  REQUIRE(std::holds_alternative<SqliteLocation>(*parsed));
  CHECK(std::get<SqliteLocation>(*parsed).path == "/var/lib/app/limits.db");
  auto relative = parse_store_url("sqlite:limits.db");
  REQUIRE(relative.ok());
  CHECK(std::get<SqliteLocation>(*relative).path == "limits.db");
}

TEST_CASE("store::parse_store_url rejects malformed URLs naming the accepted form") {
  const char* bad[] = {"",
                       "redis:/host",
                       "http://host",
                       "redis://",
                       "redis://:pw@",
                       "redis://host:",
                       "redis://host:0",
                       "redis://host:65536",
                       "redis://host:63x",
                       "redis://host/x",
                       "redis://host/-1",
                       "redis://@host",
                       "redis://:@host",
                       "redis://:%zz@host",
                       "redis://:%4@host",
                       "redis://[::1",
                       "redis://[::1]x",
                       "redis://[::1]:",
                       "redis://h?x=1",
                       "redis://a b",
                       "redis://h#frag",
                       "redis://host:6379?x=1",
                       "redis://:pw@h;x",
                       "redis://h\nx",
                       "redis://[cache]",
                       "redis://[fe80::1%25eth0]",
                       "redis://[::1 ]",
                       "unix://",
                       "rediss://",
                       "rediss:/host",
                       "rediss://host:0",
                       "unix:///",
                       "unix://host/r.sock",
                       "unix://relative.sock",
                       "unix://:@/r.sock",
                       "unix:///r.sock?db=x",
                       "unix:///r.sock?x=1",
                       "unix:///r%zz.sock",
                       "redis-sentinel://",
                       "redis-sentinel://host",
                       "redis-sentinel://host/",
                       "redis-sentinel:///mymaster",
                       "redis-sentinel://a,/mymaster",
                       "redis-sentinel://,a/mymaster",
                       "redis-sentinel://a,,b/mymaster",
                       "redis-sentinel://a:0/mymaster",
                       "redis-sentinel://a:26379,b:x/mymaster",
                       "redis-sentinel://a b/mymaster",
                       "redis-sentinel://[::1/mymaster",
                       "redis-sentinel://a/my%zzmaster",
                       "redis-sentinel://a/my%20master",
                       "redis-sentinel://a/mymaster?x=1",
                       "redis-sentinel://a/mymaster#f",
                       "redis-sentinel://a/mymaster/x",
                       "redis-sentinel://a/mymaster/1/2",
                       "redis-sentinel://:@a/mymaster",
                       "sqlite:"};
  for (const char* url : bad) {
    INFO(url);
    std::string error = error_of(url);
    CHECK(error.find("invalid store") == 0);
    CHECK(error.find("expected redis[s]://[[user]:password@]host[:port][/db], "
                     "redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], "
                     "unix://[[user]:password@]/path[?db=N] or sqlite:PATH") != std::string::npos);
  }
}

TEST_CASE("store::parse_store_url quotes the bad URL and says what is wrong") {
  CHECK(error_of("redis://host:99999") ==
        "invalid store \"redis://host:99999\": the port is not a number from 1 to 65535; "
        "expected redis[s]://[[user]:password@]host[:port][/db], "
        "redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], "
        "unix://[[user]:password@]/path[?db=N] or sqlite:PATH");
  CHECK(error_of("mysql://db").find("unknown scheme") != std::string::npos);
  CHECK(error_of("redis://h?x=1") ==
        "invalid store \"redis://h?x=1\": invalid host \"h?x=1\" (letters, digits, '-', '.' and "
        "'_', or an IPv6 address in brackets); "
        "expected redis[s]://[[user]:password@]host[:port][/db], "
        "redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], "
        "unix://[[user]:password@]/path[?db=N] or sqlite:PATH");
  CHECK(error_of("unix://cache/r.sock").find("a host before the socket's path") !=
        std::string::npos);
  CHECK(error_of("redis://[v6]").find("invalid IPv6 address \"v6\"") != std::string::npos);
}

TEST_CASE("store::parse_store_url reads sentinels, each on 26379 unless given, and the master") {
  RedisLocation location = redis("redis-sentinel://s1.internal,10.0.0.2:26380,[::1]/mymaster");
  REQUIRE(location.sentinels.size() == 3);
  CHECK(location.sentinels[0].host == "s1.internal");
  CHECK(location.sentinels[0].port == 26379);
  CHECK(location.sentinels[1].host == "10.0.0.2");
  CHECK(location.sentinels[1].port == 26380);
  CHECK(location.sentinels[2].host == "::1");
  CHECK(location.sentinels[2].address() == "[::1]:26379");
  CHECK(location.master_name == "mymaster");
  // The master's address comes from the sentinels.
  CHECK(location.host.empty());
  CHECK(location.db == 0);
  CHECK(location.password.empty());
  CHECK_FALSE(location.tls);
}

TEST_CASE("store::parse_store_url reads the master's password, user and database") {
  RedisLocation location = redis("redis-sentinel://limiter:p%40ss@s1:5000,s2/cache.main/3");
  CHECK(location.user == "limiter");
  CHECK(location.password == "p@ss");
  REQUIRE(location.sentinels.size() == 2);
  CHECK(location.sentinels[0].address() == "s1:5000");
  CHECK(location.sentinels[1].address() == "s2:26379");
  CHECK(location.master_name == "cache.main");
  CHECK(location.db == 3);
  CHECK(redis("redis-sentinel://:pw@s/m/").password == "pw");
  CHECK(redis("redis-sentinel://s/m/").db == 0);
  CHECK(redis("redis-sentinel://s/my%2Fmaster").master_name == "my/master");
  CHECK(redis("redis-sentinel://limiter@s/m").user == "limiter");
}

TEST_CASE("store::parse_store_url says which sentinel or what of the master is wrong") {
  CHECK(error_of("redis-sentinel://a,b:0/m")
            .find(": sentinel 2: the port is not a number "
                  "from 1 to 65535; expected ") != std::string::npos);
  CHECK(error_of("redis-sentinel://a:26379").find("no master name after the sentinels") !=
        std::string::npos);
  CHECK(error_of("redis-sentinel://a/m/x").find("the database is not a whole number") !=
        std::string::npos);
  CHECK(error_of("redis-sentinel://a/m?db=1").find("a '?' or '#' after the master name") !=
        std::string::npos);
}

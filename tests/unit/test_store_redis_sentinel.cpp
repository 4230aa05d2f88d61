#include "store/redis/redis_sentinel.hpp"

#include "redis_server.hpp"
#include "store/redis/redis_connection.hpp"
#include "store/store.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_timeout = 300 * core::k_nanos_per_milli;

store::HostPort address_of(const test::RedisServer& server) {
  return {"127.0.0.1", server.port()};
}

std::string failure_of(const store::RedisLocation& location) {
  try {
    store::redis::locate_master(location, k_timeout);
  } catch (const store::StoreError& error) {
    return error.what();
  }
  FAIL("no StoreError");
  return {};
}

} // namespace

// Real sentinels and a failover: tests/integration/test_redis_sentinel.sh.
TEST_CASE("store::redis::locate_master names the master and each sentinel asked, with why") {
  std::string why;
  auto plain = test::RedisServer::start(why);
  auto silent = plain ? test::RedisServer::start(why) : nullptr;
  auto stopped = silent ? test::RedisServer::start(why) : nullptr;
  if (!stopped) {
    if (test::redis_required()) {
      FAIL("redis-server is required: " << why);
    }
    MESSAGE("skipped, " << why);
    return;
  }
  store::RedisLocation location;
  location.master_name = "limits";
  location.password = "for the master only";
  location.sentinels = {address_of(*plain), address_of(*silent), address_of(*stopped)};
  std::string closed = location.sentinels[2].address();
  stopped.reset(); // nothing listens on its port any more
  silent->pause();
  std::string message = failure_of(location);
  silent->resume();
  // A plain server asked as a sentinel (and without the master's password: it would have
  // refused a password it does not want) says why.
  std::string asked = fmt::format("redis-sentinel: no sentinel gave the address of master "
                                  "\"limits\" (asked {}: SENTINEL: ",
                                  location.sentinels[0].address());
  CHECK_MESSAGE(message.starts_with(asked), message);
  std::string rest = fmt::format("; {}: no answer within 0.3s (--store-timeout); {}: cannot "
                                 "connect: connection refused)",
                                 location.sentinels[1].address(), closed);
  CHECK_MESSAGE(message.ends_with(rest), message);
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("store::redis::RedisConnection through sentinels fails as locate_master does") {
  RATELIMIT_REDIS_SERVER(server);
  store::RedisLocation location;
  location.master_name = "limits";
  location.sentinels = {address_of(*server)};
  CHECK_THROWS_WITH_AS(store::redis::RedisConnection(location, k_timeout),
                       doctest::Contains("redis-sentinel: no sentinel gave the address of master "
                                         "\"limits\""),
                       store::StoreError);
  store::redis::RedisConnection plain(server->location(), k_timeout);
  CHECK_FALSE(plain.follows_failover());
}

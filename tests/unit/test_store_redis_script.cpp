#include "store/redis/redis_script.hpp"

#include "redis_server.hpp"
#include "store/redis/redis_keys.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <redis_script.hpp>
#include <string>
#include <vector>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;

// Put before the script, in the same chunk: its calls go through a `redis` of this one, which
// fails the script on a name that is not in KEYS (Redis Cluster and proxies route a script by
// the names it declares) and on a command it does not know the keys of.
constexpr std::string_view k_declared_only = R"lua(
local real_redis = redis
local declared_names = {}
for _, name in ipairs(KEYS) do
  declared_names[name] = true
end
local first_key_commands = {}
for _, command in ipairs({'TYPE', 'HMGET', 'HGET', 'HSET', 'HDEL', 'HEXISTS', 'HGETALL',
                          'HINCRBY', 'PEXPIRE', 'PERSIST', 'PTTL', 'ZADD', 'ZRANGE',
                          'ZRANGEBYSCORE', 'ZREVRANGEBYSCORE', 'ZRANK', 'ZREM',
                          'ZREMRANGEBYRANK', 'ZREMRANGEBYSCORE', 'ZSCORE'}) do
  first_key_commands[command] = true
end
local function check_declared(command, ...)
  local arguments = {...}
  local names = {}
  if command == 'DEL' or command == 'UNLINK' or command == 'EXISTS' then
    names = arguments
  elseif first_key_commands[command] then
    names = {arguments[1]}
  elseif command ~= 'TIME' then
    error('the test does not know the keys of ' .. command)
  end
  for _, name in ipairs(names) do
    if not declared_names[name] then
      error('undeclared key ' .. name .. ' (' .. command .. ')')
    end
  end
end
local redis = setmetatable({
  call = function(command, ...)
    check_declared(command, ...)
    return real_redis.call(command, ...)
  end,
  pcall = function(command, ...)
    check_declared(command, ...)
    return real_redis.pcall(command, ...)
  end,
}, {__index = real_redis})
)lua";

struct CheckedScript {
  store::redis::RedisConnection& connection;
  std::string source = std::string(k_declared_only) + store::redis_script();

  store::redis::RedisReply run(const std::vector<std::string>& keys,
                               const std::vector<std::string>& arguments) {
    return connection.run_source(source, keys, arguments);
  }
};

std::vector<std::string> decide_arguments(const std::string& now, const std::string& algorithm,
                                          bool reserve, bool chosen) {
  // 1/min burst 1 and 5/h burst 5, periods in microseconds.
  return {
      "decide", now,        algorithm, "1", reserve ? "1" : "0", "-1", chosen ? "1" : "0", "0", "2",
      "1",      "60000000", "1",       "5", "3600000000",        "5"};
}

std::int64_t element(const store::redis::RedisReply& reply, std::size_t index) {
  std::int64_t value = 0;
  REQUIRE(store::redis::reply_integer(reply.at(index), value));
  return value;
}

} // namespace

TEST_CASE(
    "store::redis::RedisScript touches only the names it declares in KEYS, in every operation") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisConnection connection(server->location(), 2 * k_second);
  CheckedScript script{connection};
  for (std::string algorithm :
       {"token-bucket", "leaky-bucket", "fixed-window", "sliding-window", "sliding-log"}) {
    INFO(algorithm);
    std::vector<std::string> keys = store::redis::redis_keys_of("declared:", algorithm);
    CHECK(element(script.run(keys, decide_arguments("", algorithm, false, true)), 2) == 1);
    CHECK(element(script.run(keys, decide_arguments("", algorithm, false, true)), 2) == 0);
    // Reserved later, then given back.
    store::redis::RedisReply reserved =
        script.run(keys, decide_arguments("", algorithm, true, true));
    REQUIRE(element(reserved, 2) == 1);
    CHECK_NOTHROW(script.run(
        keys, {"give_back", "", algorithm, std::to_string(element(reserved, 8)), "1",
               std::to_string(element(reserved, 20)), "2", "1", "60000000", "1", "5", "3600000000",
               "5", std::to_string(element(reserved, 13)), std::to_string(element(reserved, 17))}));
    // Another algorithm, not chosen: the key keeps its own, reading its values.
    std::string other = algorithm == "sliding-log" ? "token-bucket" : "sliding-log";
    CHECK(script.run(keys, decide_arguments("", other, false, false)).text() != "damaged");
    CHECK_NOTHROW(script.run(keys, {"inspect", ""}));
    CHECK_NOTHROW(script.run(keys, {"pause", "", "1000000"}));
    CHECK_NOTHROW(script.run(keys, {"pause_of", ""}));
    CHECK_NOTHROW(script.run(keys, {"observe", "", "0", "1", "-1", "", "1", "3", "5000000"}));
    // Hours later the state is fresh: another algorithm takes the key, dropping its values.
    store::redis::RedisReply later = script.run(keys, {"inspect", ""});
    std::string hours_later = std::to_string(element(later, 3) + 10 * 3'600'000'000LL);
    CHECK(element(script.run(keys, decide_arguments(hours_later, other, false, true)), 2) == 1);
    // Reset: a sliding log (the key is one now but for the sliding log's own pass) names the
    // logs of version 1 it may have, then deletes them with the rest.
    store::redis::RedisReply reset = script.run(keys, {"reset", ""});
    CHECK((reset->type == REDIS_REPLY_ARRAY) == (other == "sliding-log"));
    if (reset->type == REDIS_REPLY_ARRAY) {
      CHECK(reset.text_of(reset.at(0)) == "declare");
      CHECK(reset.size() == 3);
      for (std::size_t i = 1; i < reset.size(); ++i) {
        for (std::string& name :
             store::redis::redis_legacy_log_keys("declared:", algorithm, element(reset, i))) {
          keys.push_back(std::move(name));
        }
      }
      reset = script.run(keys, {"reset", ""});
    }
    CHECK(reset.integer() == 1);
  }
}

TEST_CASE("store::redis::RedisScript's check of the names it touches fails on an undeclared one") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisConnection connection(server->location(), 2 * k_second);
  std::vector<std::string> keys = store::redis::redis_keys_of("undeclared:", "k");
  std::vector<std::string> arguments;
  std::string made_up = std::string(k_declared_only) + "return redis.call('TYPE', KEYS[1] .. ':x')";
  CHECK_THROWS_WITH_AS(connection.run_source(made_up, keys, arguments),
                       doctest::Contains("undeclared key undeclared:{k}:x (TYPE)"),
                       store::StoreError);
  std::string declared = std::string(k_declared_only) + "return redis.call('TYPE', KEYS[4])";
  CHECK(connection.run_source(declared, keys, arguments).text() == "none");
}

#include "store/redis/redis_store.hpp"

#include "redis_server.hpp"
#include "scoped_env.hpp"
#include "store/redis/redis_keys.hpp"
#include "util/clock.hpp"

#include <algorithm>
#include <cstdlib>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <optional>
#include <unistd.h>

using namespace ratelimit;
using test::ScopedEnv;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;

core::Limit per_second(std::int64_t count) {
  return {{count, k_second}, count};
}

// A connection of the test's own, to look at what the store wrote.
struct Inspector {
  store::redis::RedisConnection connection;
  explicit Inspector(const store::RedisLocation& location) : connection(location, 2 * k_second) {}

  std::vector<std::string> keys(const std::string& pattern) {
    std::string call[] = {"KEYS", pattern};
    store::redis::RedisReply reply = connection.command(call);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < reply.size(); ++i) {
      names.emplace_back(reply.at(i).str, reply.at(i).len);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::int64_t pttl(const std::string& name) {
    std::string call[] = {"PTTL", name};
    return connection.command(call).integer();
  }
};

core::Decision try_once(store::Store& store, std::string_view key, core::Algorithm algorithm,
                        const std::vector<core::Limit>& limits, bool reserve = false) {
  core::Request request;
  request.reserve = reserve;
  return store.decide(key, algorithm, true, limits, request);
}

} // namespace

TEST_CASE("store::redis::RedisStore decides with the server's clock, in nanoseconds") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "t1:", k_second);
  std::vector<core::Limit> limits{{{3, 2 * k_second}, 3}};
  core::Decision first = try_once(store, "api", core::Algorithm::token_bucket, limits);
  CHECK(first.allowed);
  CHECK(first.remaining == 2);
  CHECK(first.reset_after == 666'667'000); // the interval, 2s/3, rounded up to a µs
  CHECK(std::llabs(first.now - util::realtime_nanos()) < 5 * k_second);
  CHECK(first.now % 1000 == 0);
  try_once(store, "api", core::Algorithm::token_bucket, limits);
  try_once(store, "api", core::Algorithm::token_bucket, limits);
  core::Decision denied = try_once(store, "api", core::Algorithm::token_bucket, limits);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.wait > 0);
  CHECK(denied.wait <= 666'667'000);
  CHECK(std::llabs(store.now() - util::realtime_nanos()) < 5 * k_second);
}

TEST_CASE("store::redis::RedisStore keeps a key's values under the prefix, in one hash tag") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t2:", k_second);
  try_once(store, "log}key", core::Algorithm::sliding_log,
           {per_second(5), {{20, 60 * k_second}, 20}});
  try_once(store, "bucket", core::Algorithm::token_bucket, {per_second(5)});
  CHECK(redis.keys("t2:*") == std::vector<std::string>{"t2:{bucket}", "t2:{bucket}:n",
                                                       "t2:{log%7Dkey}", "t2:{log%7Dkey}:c",
                                                       "t2:{log%7Dkey}:n", "t2:{log%7Dkey}:t"});
}

TEST_CASE("store::redis::RedisStore values expire when the state is a fresh key's again") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t3:", k_second);
  core::Decision decision =
      try_once(store, "k", core::Algorithm::sliding_log, {{{2, 3 * k_second}, 2}});
  REQUIRE(decision.allowed);
  CHECK(decision.reset_after == 3 * k_second);
  for (std::string name : {"t3:{k}", "t3:{k}:t", "t3:{k}:c"}) {
    INFO(name);
    std::int64_t ttl = redis.pttl(name);
    CHECK(ttl > 2000);
    CHECK(ttl <= 3002);
  }
  // A fixed window expires at the end of its window, whatever the count.
  decision = try_once(store, "w", core::Algorithm::fixed_window, {{{5, 60 * k_second}, 5}});
  std::int64_t ttl = redis.pttl("t3:{w}");
  CHECK(ttl <= core::ceil_millis(decision.reset_after) + 2);
  CHECK(ttl >= core::ceil_millis(decision.reset_after) - 1000);
  // A reservation given back entirely leaves a fresh key: nothing is left to expire.
  core::Decision reserved =
      try_once(store, "g", core::Algorithm::leaky_bucket, {{{1, 60 * k_second}, 1}}, true);
  REQUIRE(reserved.allowed);
  CHECK(redis.keys("t3:{g}").size() == 1);
  std::vector<core::Limit> one_per_minute{{{1, 60 * k_second}, 1}};
  store.give_back("g", core::Algorithm::leaky_bucket, one_per_minute, reserved.grant);
  CHECK(redis.keys("t3:{g}").empty());
}

TEST_CASE("store::redis::RedisStore gives back a reservation") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "t4:", k_second);
  std::vector<core::Limit> limits{{{1, 10 * k_second}, 1}};
  REQUIRE(try_once(store, "k", core::Algorithm::token_bucket, limits, true).allowed);
  core::Decision reserved = try_once(store, "k", core::Algorithm::token_bucket, limits, true);
  REQUIRE(reserved.allowed);
  CHECK(reserved.wait > 9 * k_second);
  store.give_back("k", core::Algorithm::token_bucket, limits, reserved.grant);
  core::Decision after = try_once(store, "k", core::Algorithm::token_bucket, limits);
  CHECK_FALSE(after.allowed);
  CHECK(after.wait <= 10 * k_second);
  CHECK(after.wait > 8 * k_second);
}

TEST_CASE("store::redis::RedisStore refuses a key made by another algorithm") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "t5:", k_second);
  try_once(store, "k", core::Algorithm::fixed_window, {per_second(5)});
  CHECK_THROWS_AS(try_once(store, "k", core::Algorithm::token_bucket, {per_second(5)}),
                  store::KeyConflict);
}

TEST_CASE("store::redis::RedisStore: a call that chooses no algorithm uses the key's own") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "t5b:", k_second);
  // Per minute: no key may go fresh while the test runs.
  std::vector<core::Limit> limits{{{5, 60 * k_second}, 5}};
  for (core::Algorithm algorithm : core::k_all_algorithms) {
    std::string key(core::algorithm_name(algorithm));
    CAPTURE(key);
    REQUIRE(try_once(store, key, algorithm, limits).allowed);
    core::Request request;
    core::Decision decision =
        store.decide(key, core::Algorithm::sliding_log, false, limits, request);
    CHECK(decision.algorithm == algorithm);
    // The leaky bucket's next output time is 12 s away; the others have 4 of 5 left.
    CHECK(decision.allowed == (algorithm != core::Algorithm::leaky_bucket));
    core::Algorithm other = algorithm == core::Algorithm::token_bucket
                                ? core::Algorithm::sliding_log
                                : core::Algorithm::token_bucket;
    CHECK_THROWS_AS(try_once(store, key, other, limits), store::KeyConflict);
  }
  core::Request request;
  CHECK(store.decide("new", core::Algorithm::sliding_log, false, limits, request).algorithm ==
        core::Algorithm::sliding_log);
}

TEST_CASE("store::redis::RedisStore status and reset work on named keys and on all keys") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t6:", k_second);
  store::redis::RedisStore other(server->location(), "t6other:", k_second);
  try_once(store, "b", core::Algorithm::sliding_log, {per_second(5)});
  try_once(store, "a%}", core::Algorithm::token_bucket, {per_second(4), {{10, 60 * k_second}, 7}});
  try_once(other, "c", core::Algorithm::token_bucket, {per_second(5)});

  std::vector<store::KeyStatus> all = store.status({});
  REQUIRE(all.size() == 2);
  CHECK(all[0].key == "a%}");
  CHECK(all[1].key == "b");
  const store::KeyStatus& a = all[0];
  CHECK(a.state.algorithm == core::Algorithm::token_bucket);
  REQUIRE(a.state.limits.size() == 2);
  CHECK(a.state.limits[1].limit == core::Limit{{10, 60 * k_second}, 7});
  CHECK(a.state.limits[0].slots[0] > a.state.clock);  // the TAT, in nanoseconds
  CHECK(a.state.limits[0].slots[1] == a.state.clock); // the latest grant, in nanoseconds
  CHECK(a.standing.remaining == 3);
  CHECK(a.standing.binding == 0);
  CHECK(a.standing.limits[1].remaining == 6);

  std::string named[] = {"b", "missing"};
  CHECK(store.status(named).size() == 1);
  CHECK(store.reset(named, false) == 1);
  CHECK(redis.keys("t6:{b}*").empty());
  CHECK(store.reset({}, true) == 1);
  CHECK(redis.keys("t6:*").empty());
  CHECK(redis.keys("t6other:*") == std::vector<std::string>{"t6other:{c}", "t6other:{c}:n"});
  CHECK(store.collect_garbage().empty());
}

TEST_CASE(
    "store::redis::RedisStore status says when a try would be granted, and under which limit") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "t8:", k_second);
  std::vector<core::Limit> limits{per_second(100), {{2, 60 * k_second}, 2}};
  for (int i = 0; i < 2; ++i) {
    REQUIRE(try_once(store, "k", core::Algorithm::sliding_log, limits).allowed);
  }
  std::string key[] = {"k"};
  std::vector<store::KeyStatus> found = store.status(key);
  REQUIRE(found.size() == 1);
  const core::Decision& standing = found[0].standing;
  CHECK_FALSE(standing.allowed);
  CHECK(standing.binding == 1);
  CHECK(standing.wait > 50 * k_second);
  CHECK(standing.wait <= 60 * k_second);
  REQUIRE(standing.limits.size() == 2);
  CHECK(standing.limits[0].retry_after == 0);
  CHECK(standing.limits[1].retry_after == standing.wait);
}

TEST_CASE("store::redis::RedisStore keeps one log per key, as long as its longest period needs") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t9:", k_second);
  std::vector<core::Limit> both{per_second(5), {{2, 60 * k_second}, 2}};
  std::vector<core::Limit> second_only{per_second(5)};
  REQUIRE(try_once(store, "k", core::Algorithm::sliding_log, both).allowed);
  REQUIRE(try_once(store, "k", core::Algorithm::sliding_log, second_only).allowed);
  // The key holds the last call's limit only, but its log lives as long as a minute would
  // count its grants.
  CHECK(redis.keys("t9:*") ==
        std::vector<std::string>{"t9:{k}", "t9:{k}:c", "t9:{k}:n", "t9:{k}:t"});
  std::string key[] = {"k"};
  auto status = store.status(key);
  REQUIRE(status.size() == 1);
  CHECK(status[0].state.limits.size() == 1);
  CHECK(status[0].state.log_period == 60 * k_second);
  CHECK(redis.pttl("t9:{k}") > 50'000);
  CHECK(redis.pttl("t9:{k}:t") > 50'000);
  // Named again, the minute counts both grants: no more.
  core::Decision denied = try_once(store, "k", core::Algorithm::sliding_log, both);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.binding == 1);
}

TEST_CASE("store::redis::RedisStore counts requests and waits in a hash of the key's own") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t10:", k_second);
  std::vector<core::Limit> limits{{{2, 60 * k_second}, 2}};
  REQUIRE(try_once(store, "k", core::Algorithm::token_bucket, limits).allowed);
  REQUIRE(try_once(store, "k", core::Algorithm::token_bucket, limits).allowed);
  REQUIRE_FALSE(try_once(store, "k", core::Algorithm::token_bucket, limits).allowed);
  core::Decision reserved = try_once(store, "k", core::Algorithm::token_bucket, limits, true);
  REQUIRE(reserved.allowed);
  std::int64_t waited_us = reserved.wait / core::k_nanos_per_micro;
  CHECK(waited_us > 20'000'000);
  std::vector<store::NamedCounters> counters = store.counters({});
  REQUIRE(counters.size() == 1);
  CHECK(counters[0].key == "k");
  CHECK(counters[0].counters == store::KeyCounters{3, 1, waited_us});
  std::string key[] = {"k"};
  std::vector<store::KeyStatus> status = store.status(key);
  REQUIRE(status.size() == 1);
  CHECK(status[0].counters == store::KeyCounters{3, 1, waited_us});
  // They outlive the state: a month and a day, refreshed by every decision.
  std::int64_t ttl = redis.pttl("t10:{k}:n");
  CHECK(ttl > 31LL * 24 * 3600 * 1000 - 60'000);
  CHECK(ttl <= 31LL * 24 * 3600 * 1000);
  std::string drop_state[] = {"DEL", "t10:{k}"};
  redis.connection.command(drop_state);
  CHECK(store.status(key).empty());
  REQUIRE(store.counters({}).size() == 1);
  REQUIRE(try_once(store, "k", core::Algorithm::token_bucket, {{{1, 60 * k_second}, 1}}).allowed);
  CHECK(store.counters({})[0].counters == store::KeyCounters{4, 1, waited_us});
  // reset forgets them; a key with counters alone counts as one that existed.
  CHECK(store.reset(key, false) == 1);
  CHECK(store.counters({}).empty());
  CHECK(redis.keys("t10:*").empty());
}

TEST_CASE(
    "store::redis::RedisStore adds requests decided outside decide, and lists the counters asked") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t11:", k_second);
  store.add_to_counters("jobs", true, 0);
  store.add_to_counters("jobs", true, 2 * k_second);
  store.add_to_counters("jobs", false, 5 * k_second); // a refusal waited for nothing
  std::string asked[] = {"unknown", "jobs"};
  std::vector<store::NamedCounters> counters = store.counters(asked);
  REQUIRE(counters.size() == 1);
  CHECK(counters[0].key == "jobs");
  CHECK(counters[0].counters == store::KeyCounters{2, 1, 2'000'000});
  CHECK(store.status(asked).empty());
  CHECK(redis.pttl("t11:{jobs}:n") > 31LL * 24 * 3600 * 1000 - 60'000);
  std::string damage[] = {"SET", "t11:{bad}:n", "x"};
  redis.connection.command(damage);
  CHECK_THROWS_AS(store.add_to_counters("bad", true, 0), store::DamagedState);
}

TEST_CASE("store::redis::RedisStore: counters of another type are damaged state") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t11:", k_second);
  std::string set[] = {"SET", "t11:{k}:n", "x"};
  redis.connection.command(set);
  CHECK_THROWS_AS(try_once(store, "k", core::Algorithm::token_bucket, {per_second(5)}),
                  store::DamagedState);
  std::string key[] = {"k"};
  CHECK(store.reset(key, false) == 1);
  CHECK(try_once(store, "k", core::Algorithm::token_bucket, {per_second(5)}).allowed);
}

TEST_CASE("store::redis::RedisStore rounds periods up to a whole microsecond") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "t7:", k_second);
  try_once(store, "k", core::Algorithm::fixed_window, {{{1, 60 * k_second + 1'500}, 1}});
  std::string key[] = {"k"};
  auto status = store.status(key);
  REQUIRE(status.size() == 1);
  CHECK(status[0].state.limits[0].limit.rate.period == 60 * k_second + 2'000);
  CHECK_THROWS_AS(try_once(store, "big", core::Algorithm::token_bucket,
                           {{{1, k_second}, std::int64_t{1} << 53}}),
                  store::UnsupportedRequest);
}

TEST_CASE("test::redis_required by RATELIMIT_REQUIRE_REDIS=1, as scripts/test sets, or CI") {
  ScopedEnv no_ci("CI", nullptr);
  {
    ScopedEnv not_required("RATELIMIT_REQUIRE_REDIS", nullptr);
    CHECK_FALSE(test::redis_required());
    ScopedEnv ci("CI", "true");
    CHECK(test::redis_required());
  }
  {
    ScopedEnv required("RATELIMIT_REQUIRE_REDIS", "1");
    CHECK(test::redis_required());
  }
  {
    ScopedEnv other("RATELIMIT_REQUIRE_REDIS", "0");
    CHECK_FALSE(test::redis_required());
  }
}

TEST_CASE("store::redis::RedisStore fails with StoreError when the server is down or silent") {
  std::string why;
  auto server = test::RedisServer::start(why);
  if (!server) {
    if (test::redis_required()) {
      FAIL("redis-server is required: " << why);
    }
    MESSAGE("skipped, " << why);
    return;
  }
  store::RedisLocation location = server->location();
  {
    store::redis::RedisStore store(location, "t8:", 300 * core::k_nanos_per_milli);
    server->pause();
    std::int64_t started = util::monotonic_nanos();
    CHECK_THROWS_WITH_AS(try_once(store, "k", core::Algorithm::token_bucket, {per_second(1)}),
                         doctest::Contains("no answer within 0.3s"), store::StoreError);
    core::Nanos elapsed = util::monotonic_nanos() - started;
    CHECK(elapsed >= 250 * core::k_nanos_per_milli);
    CHECK(elapsed < 3 * k_second);
    server->resume();
  }
  server.reset(); // stopped: nothing listens on the port any more
  CHECK_THROWS_WITH_AS(store::redis::RedisStore(location, "t8:", k_second),
                       doctest::Contains("cannot connect: connection refused"), store::StoreError);
}

TEST_CASE("store::redis::RedisStore follows Redis Cluster redirections to the key's node") {
  std::string why;
  auto cluster = test::RedisServer::start_cluster(why, 2);
  if (cluster.empty()) {
    if (test::redis_required()) {
      FAIL("redis-server is required: " << why);
    }
    MESSAGE("skipped, " << why);
    return;
  }
  const auto& first = cluster[0];
  store::redis::RedisConnection a(cluster[0]->location(), 2 * k_second);
  store::redis::RedisConnection b(cluster[1]->location(), 2 * k_second);

  store::redis::RedisStore store(first->location(), "c:", 2 * k_second);
  for (std::string key : {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}) {
    INFO(key);
    // Periods long enough that a slow, sanitized round trip through the redirection
    // cannot see the first grant leave the window before the second call.
    std::vector<core::Limit> limits{{{1, 30 * k_second}, 1}, {{5, 60 * k_second}, 5}};
    CHECK(try_once(store, key, core::Algorithm::sliding_log, limits).allowed);
    CHECK_FALSE(try_once(store, key, core::Algorithm::sliding_log, limits).allowed);
  }
  std::int64_t on_a = a.command(std::vector<std::string>{"DBSIZE"}).integer();
  std::int64_t on_b = b.command(std::vector<std::string>{"DBSIZE"}).integer();
  // Each key's hash, its two log sets and its counters, on one node.
  CHECK(on_a + on_b == 6 * 4);
  CHECK(on_a > 0);
  CHECK(on_b > 0);
}

TEST_CASE(
    "store::redis::RedisStore resets the per-limit logs of version 1, declared to the script") {
  RATELIMIT_REDIS_SERVER(server);
  Inspector redis(server->location());
  store::redis::RedisStore store(server->location(), "t13:", k_second);
  std::vector<core::Limit> limits{per_second(5), {{20, 60 * k_second}, 20}};
  REQUIRE(try_once(store, "k", core::Algorithm::sliding_log, limits).allowed);
  // The logs version 1 kept per limit, by period in microseconds.
  for (const char* period : {"1000000", "60000000"}) {
    for (const char* set : {"t", "c"}) {
      std::string name = fmt::format("t13:{{k}}:{}:{}", set, period);
      std::string call[] = {"ZADD", name, "1", "0000000000000001"};
      redis.connection.command(call);
    }
  }
  REQUIRE(try_once(store, "b", core::Algorithm::token_bucket, limits).allowed);
  // k: its hash, its log, its counters and the old logs; b: its hash and its counters.
  CHECK(redis.keys("t13:*").size() == 4 + 4 + 2);
  std::string both[] = {"k", "b"};
  CHECK(store.reset(both, false) == 2);
  CHECK(redis.keys("t13:*").empty());
}

#include "store/redis/redis_keys.hpp"

#include <doctest/doctest.h>

using namespace ratelimit::store;
using namespace ratelimit::store::redis;

TEST_CASE("store::redis::redis_key puts the key in a hash tag under the prefix") {
  CHECK(redis_key("ratelimit:", "api") == "ratelimit:{api}");
  CHECK(redis_key("", "api") == "{api}");
  // One log per key, whatever the periods of its limits.
  CHECK(redis_keys_of("p:", "api") ==
        std::vector<std::string>{"p:{api}", "p:{api}:t", "p:{api}:c", "p:{api}:n"});
  // The per-limit logs of version 1, which only reset removes.
  CHECK(redis_legacy_log_keys("p:", "a}b", 60'000'000) ==
        std::vector<std::string>{"p:{a%7Db}:t:60000000", "p:{a%7Db}:c:60000000"});
  CHECK(redis_counters_key("p:", "a}b") == "p:{a%7Db}:n");
  CHECK(key_of_redis_counters_name("p:", "p:{a%7Db}:n") == "a}b");
  CHECK_FALSE(key_of_redis_counters_name("p:", "p:{a}"));
  CHECK_FALSE(key_of_redis_counters_name("p:", "p:{a}:t"));
  CHECK_FALSE(key_of_redis_counters_name("q:", "p:{a}:n"));
}

TEST_CASE("store::redis::redis_key escapes } and % so that the tag covers the whole key") {
  CHECK(redis_key("r:", "a}b") == "r:{a%7Db}");
  CHECK(redis_key("r:", "}") == "r:{%7D}");
  CHECK(redis_key("r:", "50%") == "r:{50%25}");
  CHECK(redis_key("r:", "%7D") == "r:{%257D}");
  CHECK(redis_key("r:", "{x") == "r:{{x}");
}

TEST_CASE("store::redis::key_of_redis_name inverts redis_key and ignores other names") {
  for (const std::string& key :
       std::vector<std::string>{"api", "a}b", "}", "50%", "%7D", "{x", std::string("nul\0byte", 8),
                                std::string("line\nbreak")}) {
    INFO(key);
    CHECK(key_of_redis_name("r:", redis_key("r:", key)) == key);
  }
  CHECK_FALSE(key_of_redis_name("r:", "r:{api}:t:1000000"));
  CHECK_FALSE(key_of_redis_name("r:", "other:{api}"));
  CHECK_FALSE(key_of_redis_name("r:", "r:{}"));
  CHECK_FALSE(key_of_redis_name("r:", "r:{a}b}"));
  CHECK_FALSE(key_of_redis_name("r:", "r:{a%zzb}"));
}

TEST_CASE("store::redis::redis_scan_pattern escapes glob characters of the prefix") {
  CHECK(redis_scan_pattern("ratelimit:") == "ratelimit:{*");
  CHECK(redis_scan_pattern("a*b?[c]\\") == "a\\*b\\?\\[c\\]\\\\{*");
}

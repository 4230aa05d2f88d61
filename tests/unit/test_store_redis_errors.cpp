#include "store/redis/redis_errors.hpp"

#include <doctest/doctest.h>

using ratelimit::store::redis::is_unavailable_reply;

TEST_CASE("store::redis::is_unavailable_reply: the replies of a server that cannot serve now") {
  CHECK(is_unavailable_reply("LOADING Redis is loading the dataset in memory"));
  CHECK(is_unavailable_reply("BUSY Redis is busy running a script. You can only call "
                             "SCRIPT KILL or SHUTDOWN NOSAVE."));
  CHECK(is_unavailable_reply("MASTERDOWN Link with MASTER is down and "
                             "replica-serve-stale-data is set to 'no'."));
  CHECK(is_unavailable_reply("CLUSTERDOWN The cluster is down"));
  CHECK(is_unavailable_reply("TRYAGAIN Multiple keys request during rehashing of slot"));
  // Passed on from inside a script by an older server.
  CHECK(is_unavailable_reply("ERR Error running script (call to f_x): @user_script:1: "
                             "-LOADING Redis is loading"));
}

TEST_CASE("store::redis::is_unavailable_reply: refusals and damaged state are not outages") {
  CHECK_FALSE(is_unavailable_reply("WRONGPASS invalid username-password pair"));
  CHECK_FALSE(is_unavailable_reply("NOAUTH Authentication required."));
  CHECK_FALSE(is_unavailable_reply("NOPERM this user has no permissions"));
  CHECK_FALSE(
      is_unavailable_reply("WRONGTYPE Operation against a key holding the wrong kind of value"));
  CHECK_FALSE(is_unavailable_reply("OOM command not allowed when used memory > 'maxmemory'."));
  CHECK_FALSE(is_unavailable_reply("ERR unknown command 'EVALSHA'"));
  CHECK_FALSE(is_unavailable_reply("BUSYKEY Target key name already exists."));
  CHECK_FALSE(is_unavailable_reply("LOADINGX"));
}

#include "store/redis/redis_cluster.hpp"

#include "redis_server.hpp"
#include "store/redis/redis_keys.hpp"
#include "store/redis/redis_store.hpp"

#include <doctest/doctest.h>
#include <set>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;

std::int64_t dbsize(const test::RedisServer& server) {
  store::redis::RedisConnection node(server.location(), 2 * k_second);
  return node.command(std::vector<std::string>{"DBSIZE"}).integer();
}

} // namespace

TEST_CASE(
    "store::redis::redis_hash_slot is Redis Cluster's slot, by the hash tag when there is one") {
  // CLUSTER KEYSLOT's answers.
  CHECK(store::redis::redis_hash_slot("foo") == 12182);
  CHECK(store::redis::redis_hash_slot("123456789") == 12739);
  CHECK(store::redis::redis_hash_slot("") == 0);
  CHECK(store::redis::redis_hash_slot("{user1000}.following") ==
        store::redis::redis_hash_slot("user1000"));
  CHECK(store::redis::redis_hash_slot("foo{bar}{zap}") == store::redis::redis_hash_slot("bar"));
  CHECK(store::redis::redis_hash_slot("foo{{bar}}zap") == store::redis::redis_hash_slot("{bar"));
  // An empty tag does not count: the whole name is hashed.
  CHECK(store::redis::redis_hash_slot("foo{}{bar}") != store::redis::redis_hash_slot("bar"));
  // Every name of one key shares its slot, the logs of version 1 too.
  int slot = store::redis::redis_hash_slot(store::redis::redis_key("p:", "a}b{c"));
  for (const std::string& name : store::redis::redis_keys_of("p:", "a}b{c")) {
    CHECK(store::redis::redis_hash_slot(name) == slot);
  }
  for (const std::string& name : store::redis::redis_legacy_log_keys("p:", "a}b{c", 1'000'000)) {
    CHECK(store::redis::redis_hash_slot(name) == slot);
  }
}

TEST_CASE("store::redis::redis_cluster_masters finds no cluster on a plain server") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisConnection connection(server->location(), 2 * k_second);
  CHECK(store::redis::redis_cluster_masters(connection).empty());
}

TEST_CASE(
    "store::redis::RedisStore lists, counts and resets the keys of every master of a cluster") {
  std::string why;
  auto cluster = test::RedisServer::start_cluster(why, 3);
  if (cluster.empty()) {
    if (test::redis_required()) {
      FAIL("redis-server is required: " << why);
    }
    MESSAGE("skipped, " << why);
    return;
  }
  {
    store::redis::RedisConnection connection(cluster[1]->location(), 2 * k_second);
    std::vector<store::RedisLocation> masters = store::redis::redis_cluster_masters(connection);
    std::set<int> ports;
    for (const store::RedisLocation& master : masters) {
      CHECK(master.host == "127.0.0.1");
      ports.insert(master.port);
    }
    CHECK(ports == std::set<int>{cluster[0]->port(), cluster[1]->port(), cluster[2]->port()});
  }

  store::redis::RedisStore store(cluster[0]->location(), "c:", 2 * k_second);
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) {
    keys.push_back("key" + std::to_string(10 + i));
  }
  std::vector<core::Limit> limits{{{5, 60 * k_second}, 5}};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    core::Algorithm algorithm =
        i % 2 ? core::Algorithm::sliding_log : core::Algorithm::token_bucket;
    CHECK(store.decide(keys[i], algorithm, true, limits, core::Request{}).allowed);
  }
  for (const auto& server : cluster) {
    CHECK(dbsize(*server) > 0);
  }

  std::vector<store::KeyStatus> status = store.status({});
  REQUIRE(status.size() == keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    CHECK(status[i].key == keys[i]);
    CHECK(status[i].counters.granted == 1);
  }
  std::vector<store::NamedCounters> counters = store.counters({});
  REQUIRE(counters.size() == keys.size());
  CHECK(counters.front().key == keys.front());
  CHECK(counters.back().counters.granted == 1);

  std::unique_ptr<store::RunSlots> slots = store.run_slots(10 * k_second);
  std::vector<core::RunCap> caps{{1, 0}};
  CHECK(slots->join("key10", 1, 0, caps).started);
  std::unique_ptr<store::RunSlots> other = store.run_slots(10 * k_second);
  CHECK(other->join("key29", 1, 0, caps).started);
  std::vector<store::RunEntry> entries = store.run_entries({});
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].key == "key10");
  CHECK(entries[1].key == "key29");

  CHECK(store.reset({}, true) == keys.size());
  for (const auto& server : cluster) {
    CHECK(dbsize(*server) == 0);
  }
  CHECK(store.status({}).empty());
}

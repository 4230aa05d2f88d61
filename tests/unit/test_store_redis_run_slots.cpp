// The Redis run slots against a redis-server of the tests' own: the cap, arrival order, the
// hold after the exit, and a holder whose lease ran out.
#include "store/redis/redis_run_slots.hpp"

#include "redis_server.hpp"
#include "store/redis/redis_store.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_second = core::k_nanos_per_second;

} // namespace

TEST_CASE("store::RedisRunSlots caps how many run at once, in arrival order") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "rs1:", k_second);
  std::vector<core::RunCap> caps{{1, 0}};
  auto a = store.run_slots(30 * k_second);
  auto b = store.run_slots(30 * k_second);
  auto c = store.run_slots(30 * k_second);
  CHECK(a->join("k", 1, 0, caps).started);
  store::StartAnswer answer = b->join("k", 1, 0, caps);
  CHECK_FALSE(answer.started);
  CHECK(answer.admission.admission == core::Admission::on_exit);
  CHECK(c->join("k", 1, 0, caps).behind);
  std::string keys[] = {"k"};
  CHECK(store.run_entries(keys).size() == 3);
  CHECK(store.run_entries({}).size() == 3);
  a->finish();
  CHECK(c->try_start(caps).behind);
  CHECK(b->try_start(caps).started);
  b->finish();
  CHECK(c->try_start(caps).started);
  c->finish();
  CHECK(store.run_entries(keys).empty());
}

TEST_CASE("store::RedisRunSlots holds an --until-exit slot for the period after the exit") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "rs2:", k_second);
  std::vector<core::RunCap> caps{{1, 10 * k_second}};
  auto a = store.run_slots(30 * k_second);
  auto b = store.run_slots(30 * k_second);
  CHECK(a->join("k", 1, 10 * k_second, caps).started);
  a->finish();
  store::StartAnswer answer = b->join("k", 1, 10 * k_second, caps);
  CHECK_FALSE(answer.started);
  CHECK(answer.admission.admission == core::Admission::at);
  CHECK(answer.admission.at - answer.now > 9 * k_second);
  CHECK(answer.admission.at - answer.now <= 10 * k_second);
}

TEST_CASE("store::RedisRunSlots frees the slot of a holder whose lease ran out") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "rs3:", k_second);
  std::vector<core::RunCap> caps{{1, 0}};
  auto a = store.run_slots(k_second);
  auto b = store.run_slots(k_second);
  CHECK(a->join("k", 1, 0, caps).started);
  CHECK_FALSE(b->join("k", 1, 0, caps).started);
  ::usleep(1'200'000); // a never renews: dead
  CHECK(b->try_start(caps).started);
}

TEST_CASE("store::RedisRunSlots start nothing while the key is paused, as every other grant") {
  RATELIMIT_REDIS_SERVER(server);
  store::redis::RedisStore store(server->location(), "rs-pause:", k_second);
  std::vector<core::RunCap> caps{{2, 0}};
  store::PauseStanding pause = store.pause("k", 30 * k_second);
  auto a = store.run_slots(30 * k_second);
  store::StartAnswer answer = a->join("k", 1, 0, caps);
  CHECK_FALSE(answer.started);
  CHECK(answer.admission.admission == core::Admission::at);
  // The script's clock is in microseconds.
  CHECK(answer.admission.at / 1000 == pause.paused_until / 1000);
  CHECK(answer.admission.paused_until == answer.admission.at);
  CHECK_FALSE(a->try_start(caps).started);
  a->leave();
  std::string keys[] = {"k"};
  store.reset(keys, false);
  CHECK(a->join("k", 1, 0, caps).started);
  a->finish();
}

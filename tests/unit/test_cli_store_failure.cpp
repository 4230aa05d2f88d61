#include "cli/store_failure.hpp"

#include "cli/gate.hpp"
#include "store/sqlite_store.hpp"
#include "temporary_database.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_minute = 60 * core::k_nanos_per_second;

cli::GlobalOptions options_on(const char* on_store_error) {
  cli::GlobalOptions options;
  options.on_store_error = on_store_error;
  return options;
}

// A remote store as the gate sees it: a SQLite database that can be made to fail, with an
// outage or with damaged state, as a Redis server can.
class FailingStore final : public store::Store {
public:
  enum class Failure { none, outage, damaged };

  explicit FailingStore(const std::string& path) : m_store(path, k_minute) {}
  Failure failure = Failure::none;

  core::Decision decide(std::string_view key, core::Algorithm algorithm, bool chosen,
                        std::span<const core::Limit> limits, core::Request request) override {
    check();
    return m_store.decide(key, algorithm, chosen, limits, request);
  }
  void give_back(std::string_view key, core::Algorithm algorithm,
                 std::span<const core::Limit> limits, const core::Grant& grant) override {
    check();
    m_store.give_back(key, algorithm, limits, grant);
  }
  std::vector<store::KeyStatus> status(std::span<const std::string> keys) override {
    return m_store.status(keys);
  }
  std::vector<store::NamedCounters> counters(std::span<const std::string> keys) override {
    return m_store.counters(keys);
  }
  void add_to_counters(std::string_view key, bool granted, core::Nanos waited) override {
    check();
    m_store.add_to_counters(key, granted, waited);
  }
  std::size_t reset(std::span<const std::string> keys, bool all) override {
    return m_store.reset(keys, all);
  }
  store::PauseStanding pause(std::string_view key, core::Nanos duration) override {
    return m_store.pause(key, duration);
  }
  store::PauseStanding pause_of(std::string_view key) override {
    check();
    return m_store.pause_of(key);
  }
  std::vector<std::string> collect_garbage() override { return m_store.collect_garbage(); }
  core::Nanos now() override { return m_store.now(); }
  std::unique_ptr<store::RunSlots> run_slots(core::Nanos lease) override {
    return m_store.run_slots(lease);
  }
  std::vector<store::RunEntry> run_entries(std::span<const std::string> keys) override {
    return m_store.run_entries(keys);
  }

private:
  void check() const {
    if (failure == Failure::outage) {
      throw store::StoreUnavailable("redis 127.0.0.1:6379: the server closed the connection");
    }
    if (failure == Failure::damaged) {
      throw store::DamagedState("redis 127.0.0.1:6379: the state of key \"k\" is damaged");
    }
  }

  store::SqliteStore m_store;
};

cli::LimitedRequest three_a_minute() {
  cli::LimitedRequest request;
  request.key = std::string("k"); // not from a char*: GCC 12 warns of a false overlap
  request.algorithm = core::Algorithm::sliding_log;
  request.limits = {{{3, k_minute}, 3}};
  return request;
}

std::int64_t granted_in(const std::string& path) {
  store::SqliteStore database(path, k_minute);
  std::string key = "k";
  auto status = database.status(std::span(&key, 1));
  return status.empty() ? 0 : status.front().counters.granted;
}

// A gate on a remote store that can fail, with the local database beside it, under
// --on-store-error=MODE.
struct GateOnFailingStore {
  explicit GateOnFailingStore(const char* mode) : global(options_on(mode)) {
    global.db = local_file.path();
  }

  test::TemporaryDatabase remote_file;
  test::TemporaryDatabase local_file;
  FailingStore remote{remote_file.path()};
  cli::GlobalOptions global;
  cli::LimitedRequest request = three_a_minute();
  cli::FailOpenGate gate{&remote, request, global};
};

} // namespace

TEST_CASE("cli::falls_back_locally: only an outage under local") {
  store::StoreUnavailable outage("redis h:1: cannot connect: connection refused");
  store::DamagedState damaged("redis h:1: the state of key \"k\" is damaged");
  store::StoreError refused("redis h:1: wrong password or user");
  CHECK(cli::falls_back_locally(options_on("local"), outage));
  CHECK_FALSE(cli::falls_back_locally(options_on("local"), damaged));
  CHECK_FALSE(cli::falls_back_locally(options_on("local"), refused));
  CHECK_FALSE(cli::falls_back_locally(options_on("allow"), outage));
  CHECK_FALSE(cli::falls_back_locally(options_on("deny"), outage));
}

TEST_CASE("cli::local_fallback_warning is one line naming the failure, the database and what "
          "it means") {
  CHECK(cli::local_fallback_warning("redis h:1: cannot connect: connection refused", "/x/l.db") ==
        "ratelimit: warning: redis h:1: cannot connect: connection refused; deciding on the "
        "local database \"/x/l.db\" instead: the limit is kept on this host only "
        "(--on-store-error=local)\n");
  std::string forged = cli::local_fallback_warning("a\nratelimit: forged", "b\nc");
  CHECK(forged.find('\n') == forged.size() - 1);
}

TEST_CASE("cli::FailOpenGate under local goes on in the local database after an outage") {
  GateOnFailingStore fixture("local");
  auto& [remote_file, local_file, remote, global, request, gate] = fixture;
  core::Request ask;
  CHECK(gate.decide(ask).allowed);
  CHECK(granted_in(remote_file.path()) == 1);
  CHECK(global.local_fallback.empty());

  remote.failure = FailingStore::Failure::outage;
  // The local key is fresh: three grants there, then limited there.
  CHECK(gate.decide(ask).allowed);
  CHECK(global.local_fallback == "redis 127.0.0.1:6379: the server closed the connection");
  CHECK(gate.decide(ask).allowed);
  CHECK(gate.decide(ask).allowed);
  CHECK_FALSE(gate.decide(ask).allowed);
  CHECK(granted_in(local_file.path()) == 3);
  // For the rest of the stream, even once the remote store works again.
  remote.failure = FailingStore::Failure::none;
  CHECK_FALSE(gate.decide(ask).allowed);
  CHECK(granted_in(remote_file.path()) == 1);
}

TEST_CASE("cli::FailOpenGate under local: damaged state is an error, not a fallback") {
  GateOnFailingStore fixture("local");
  auto& [remote_file, local_file, remote, global, request, gate] = fixture;
  remote.failure = FailingStore::Failure::damaged;
  CHECK_THROWS_AS(gate.decide({}), store::DamagedState);
  CHECK(global.local_fallback.empty());
  CHECK(granted_in(local_file.path()) == 0);
}

TEST_CASE("cli::FailOpenGate under deny throws the outage") {
  GateOnFailingStore fixture("deny");
  auto& [remote_file, local_file, remote, global, request, gate] = fixture;
  remote.failure = FailingStore::Failure::outage;
  CHECK_THROWS_AS(gate.decide({}), store::StoreUnavailable);
  CHECK(granted_in(local_file.path()) == 0);
}

#include "cli/store_failure.hpp"

#include "cli/gate.hpp"
#include "cli/store_opener.hpp"
#include "cli/usage_error.hpp"
#include "scoped_env.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "temporary_database.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <stdexcept>

using namespace ratelimit;

namespace {

constexpr core::Nanos k_minute = 60 * core::k_nanos_per_second;

// The settings of a store whose failures `on_error` answers, with `local` as the local database.
cli::StoreSettings settings_on(cli::OnStoreError on_error, const std::string& local) {
  store::DatabaseLocation database{local, "", ""};
  store::StoreSettings open;
  open.lock_timeout = 10 * core::k_nanos_per_second;
  return cli::StoreSettings{database, open, on_error, database, {}};
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
  store::PauseStanding pause_of(std::string_view key, const core::Grant* grant = nullptr) override {
    check();
    return m_store.pause_of(key, grant);
  }
  store::PauseStanding observe(std::string_view key,
                               const core::Observation& observation) override {
    return m_store.observe(key, observation);
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

  store::sqlite::SqliteStore m_store;
};

cli::LimitedRequest three_a_minute() {
  cli::LimitedRequest request;
  request.key = std::string("k"); // not from a char*: GCC 12 warns of a false overlap
  request.algorithm = core::Algorithm::sliding_log;
  request.limits = {{{3, k_minute}, 3}};
  return request;
}

std::int64_t granted_in(const std::string& path) {
  store::sqlite::SqliteStore database(path, k_minute);
  std::string key = "k";
  auto status = database.status(std::span(&key, 1));
  return status.empty() ? 0 : status.front().counters.granted;
}

// A gate on a remote store that can fail, with the local database beside it, under
// --on-store-error=`on_error`.
struct GateOnFailingStore {
  explicit GateOnFailingStore(cli::OnStoreError on_error)
      : stores(settings_on(on_error, local_file.path())) {}

  test::TemporaryDatabase remote_file;
  test::TemporaryDatabase local_file;
  FailingStore remote{remote_file.path()};
  cli::StoreOpener stores;
  cli::LimitedRequest request = three_a_minute();
  cli::FailOpenGate gate{&remote, request, stores};
};

} // namespace

TEST_CASE("cli::falls_back_locally: only an outage under local") {
  store::StoreUnavailable outage("redis h:1: cannot connect: connection refused");
  store::DamagedState damaged("redis h:1: the state of key \"k\" is damaged");
  store::StoreError refused("redis h:1: wrong password or user");
  CHECK(cli::falls_back_locally(cli::OnStoreError::local, outage));
  CHECK_FALSE(cli::falls_back_locally(cli::OnStoreError::local, damaged));
  CHECK_FALSE(cli::falls_back_locally(cli::OnStoreError::local, refused));
  CHECK_FALSE(cli::falls_back_locally(cli::OnStoreError::allow, outage));
  CHECK_FALSE(cli::falls_back_locally(cli::OnStoreError::deny, outage));
}

TEST_CASE("cli::goes_on_without_store: under allow, and under local for an outage") {
  store::StoreUnavailable outage("redis h:1: cannot connect: connection refused");
  store::DamagedState damaged("redis h:1: the state of key \"k\" is damaged");
  CHECK(cli::goes_on_without_store(cli::OnStoreError::allow, outage));
  CHECK(cli::goes_on_without_store(cli::OnStoreError::allow, damaged));
  CHECK(cli::goes_on_without_store(cli::OnStoreError::local, outage));
  CHECK_FALSE(cli::goes_on_without_store(cli::OnStoreError::local, damaged));
  CHECK_FALSE(cli::goes_on_without_store(cli::OnStoreError::deny, outage));
  CHECK(cli::without_store_warning(cli::OnStoreError::allow, "a\nb") ==
        "ratelimit: warning: a b; going on without the store (--on-store-error=allow)\n");
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
  GateOnFailingStore fixture(cli::OnStoreError::local);
  auto& [remote_file, local_file, remote, stores, request, gate] = fixture;
  core::Request ask;
  CHECK(gate.decide(ask).allowed);
  CHECK(granted_in(remote_file.path()) == 1);
  CHECK(stores.local_fallback().empty());
  CHECK(gate.local_fallback().empty());

  remote.failure = FailingStore::Failure::outage;
  // The local key is fresh: three grants there, then limited there.
  CHECK(gate.decide(ask).allowed);
  CHECK(stores.local_fallback() == "redis 127.0.0.1:6379: the server closed the connection");
  CHECK(gate.local_fallback() == stores.local_fallback());
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
  GateOnFailingStore fixture(cli::OnStoreError::local);
  auto& [remote_file, local_file, remote, stores, request, gate] = fixture;
  remote.failure = FailingStore::Failure::damaged;
  CHECK_THROWS_AS(gate.decide({}), store::DamagedState);
  CHECK(stores.local_fallback().empty());
  CHECK(gate.local_fallback().empty());
  CHECK(granted_in(local_file.path()) == 0);
}

TEST_CASE("cli::FailOpenGate under deny throws the outage") {
  GateOnFailingStore fixture(cli::OnStoreError::deny);
  auto& [remote_file, local_file, remote, stores, request, gate] = fixture;
  remote.failure = FailingStore::Failure::outage;
  CHECK_THROWS_AS(gate.decide({}), store::StoreUnavailable);
  CHECK(granted_in(local_file.path()) == 0);
}

TEST_CASE("cli::StoreOpener resolves its settings at the first need, once") {
  int resolved = 0;
  test::TemporaryDatabase database;
  cli::StoreOpener stores([&] {
    ++resolved;
    return core::Result<cli::StoreSettings>(settings_on(cli::OnStoreError::deny, database.path()));
  });
  CHECK(resolved == 0);
  CHECK(stores.open_existing() == nullptr); // not created
  CHECK(stores.open() != nullptr);
  CHECK(stores.open_existing() != nullptr);
  CHECK(resolved == 1);
  cli::StoreOpener failing(
      [] { return core::Result<cli::StoreSettings>::failure("--lock-timeout: bad"); });
  CHECK_THROWS_WITH_AS(failing.open(), "--lock-timeout: bad", cli::UsageError);
}

TEST_CASE("cli::StoreOpener::open_or_fall_back: local for an outage, nothing under allow, the "
          "error under deny") {
  test::TemporaryDatabase local;
  store::StoreUnavailable outage("redis h:1: cannot connect: connection refused");
  auto fails = [&](store::Store&) { throw outage; };
  std::string failure;
  {
    cli::StoreOpener stores(settings_on(cli::OnStoreError::local, local.path()));
    std::size_t calls = 0;
    // The first use fails on the store, then works on the local database.
    auto store = stores.open_or_fall_back(failure, [&](store::Store&) {
      if (++calls == 1) {
        throw outage;
      }
    });
    CHECK(store != nullptr);
    CHECK(calls == 2);
    CHECK(failure.empty());
    CHECK(stores.local_fallback() == outage.what());
  }
  {
    cli::StoreOpener stores(settings_on(cli::OnStoreError::allow, local.path()));
    CHECK(stores.open_or_fall_back(failure, fails) == nullptr);
    CHECK(failure == outage.what());
    CHECK(stores.local_fallback().empty());
  }
  cli::StoreOpener stores(settings_on(cli::OnStoreError::deny, local.path()));
  CHECK_THROWS_AS(stores.open_or_fall_back(failure, fails), store::StoreUnavailable);
}

TEST_CASE("cli::StoreOpener: without a local database, falling back is a usage error") {
  cli::StoreSettings settings = settings_on(cli::OnStoreError::local, "unused.db");
  settings.local_database = core::Result<store::DatabaseLocation>::failure(
      "cannot find the database: HOME is not set; give --db PATH or set RATELIMIT_DB");
  cli::StoreOpener stores(std::move(settings));
  store::StoreUnavailable outage("redis h:1: cannot connect: connection refused");
  CHECK(stores.falls_back_locally(outage));
  CHECK_THROWS_AS(stores.fall_back_locally(outage), cli::UsageError);
  CHECK(stores.local_fallback().empty());
}

TEST_CASE("cli::StoreOpener::export_environment sets and unsets the store's variables") {
  test::ScopedEnv db("RATELIMIT_DB", "other.db");
  test::ScopedEnv store("RATELIMIT_STORE", nullptr);
  cli::StoreSettings settings = settings_on(cli::OnStoreError::deny, "x.db");
  settings.nested_environment = {{"RATELIMIT_STORE", "redis://h"}, {"RATELIMIT_DB", std::nullopt}};
  cli::StoreOpener(std::move(settings)).export_environment();
  REQUIRE(std::getenv("RATELIMIT_STORE") != nullptr);
  CHECK(std::string(std::getenv("RATELIMIT_STORE")) == "redis://h");
  CHECK(std::getenv("RATELIMIT_DB") == nullptr);
}

// The SQLite run slots with a fake clock: several places on one database in one process
// (each with a liveness file of its own, so each looks alive to the others).
#include "store/sqlite/sqlite_run_slots.hpp"

#include "store/sqlite/sqlite_store.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <string>

using namespace ratelimit;
using core::Nanos;

namespace {

constexpr Nanos k_s = core::k_nanos_per_second;
constexpr Nanos k_t0 = 1'700'000'000 * k_s;

class ScratchStore {
public:
  ScratchStore() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ratelimit-unit.XXXXXX");
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    m_directory = pattern;
    m_store = std::make_unique<store::sqlite::SqliteStore>(
        m_directory + "/test.db", 10 * k_s, store::Creation::if_missing, [this] { return now; });
  }
  ~ScratchStore() {
    m_store.reset();
    std::filesystem::remove_all(m_directory);
  }
  store::sqlite::SqliteStore& operator*() { return *m_store; }
  store::sqlite::SqliteStore* operator->() { return m_store.get(); }
  const std::string& directory() const { return m_directory; }

  Nanos now = k_t0;

private:
  std::string m_directory;
  std::unique_ptr<store::sqlite::SqliteStore> m_store;
};

} // namespace

TEST_CASE("store::SqliteRunSlots caps how many run at once, and frees a slot at the exit") {
  ScratchStore db;
  std::vector<core::RunCap> caps{{2, 0}};
  auto a = db->run_slots(0);
  auto b = db->run_slots(0);
  auto c = db->run_slots(0);
  CHECK(a->join("k", 1, 0, caps).started);
  CHECK(b->join("k", 1, 0, caps).started);
  store::StartAnswer answer = c->join("k", 1, 0, caps);
  CHECK_FALSE(answer.started);
  CHECK_FALSE(answer.behind);
  CHECK(answer.admission.admission == core::Admission::on_exit);
  CHECK(db->run_entries({}).size() == 3);
  a->finish();
  CHECK(c->try_start(caps).started);
  std::vector<store::RunEntry> entries = db->run_entries({});
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].running);
  CHECK(entries[0].pid == ::getpid());
}

TEST_CASE("store::SqliteRunSlots holds an --until-exit slot for the period after the exit") {
  ScratchStore db;
  std::vector<core::RunCap> caps{{1, 1 * k_s}};
  auto a = db->run_slots(0);
  auto b = db->run_slots(0);
  CHECK(a->join("k", 1, 1 * k_s, caps).started);
  db.now += k_s / 2;
  a->finish();
  store::StartAnswer answer = b->join("k", 1, 1 * k_s, caps);
  CHECK_FALSE(answer.started);
  CHECK(answer.admission.admission == core::Admission::at);
  CHECK(answer.admission.at == k_t0 + 3 * k_s / 2);
  db.now = k_t0 + 3 * k_s / 2;
  CHECK(b->try_start(caps).started);
}

TEST_CASE("store::SqliteRunSlots serves waiters in arrival order") {
  ScratchStore db;
  std::vector<core::RunCap> caps{{1, 0}};
  auto a = db->run_slots(0);
  auto b = db->run_slots(0);
  auto c = db->run_slots(0);
  CHECK(a->join("k", 1, 0, caps).started);
  CHECK_FALSE(b->join("k", 1, 0, caps).started);
  CHECK_FALSE(c->join("k", 1, 0, caps).started);
  a->finish();
  // c came later: b, alive and waiting, goes first.
  store::StartAnswer answer = c->try_start(caps);
  CHECK_FALSE(answer.started);
  CHECK(answer.behind);
  CHECK(b->try_start(caps).started);
  b->leave();
  CHECK(c->try_start(caps).started);
}

TEST_CASE("store::SqliteRunSlots removes a waiter whose liveness file is unlocked") {
  ScratchStore db;
  std::vector<core::RunCap> caps{{1, 0}};
  auto a = db->run_slots(0);
  CHECK(a->join("k", 1, 0, caps).started);
  {
    // A waiter that dies: its row stays, its file is gone with it.
    auto dead = db->run_slots(0);
    CHECK_FALSE(dead->join("k", 1, 0, caps).started);
  }
  auto c = db->run_slots(0);
  CHECK_FALSE(c->join("k", 1, 0, caps).behind);
  a->finish();
  CHECK(c->try_start(caps).started);
  CHECK(db->run_entries({}).size() == 1);
}

TEST_CASE("store::sqlite::SqliteStore::reset frees a key's run slots") {
  ScratchStore db;
  std::vector<core::RunCap> caps{{1, 0}};
  auto a = db->run_slots(0);
  auto b = db->run_slots(0);
  CHECK(a->join("k", 1, 0, caps).started);
  CHECK_FALSE(b->join("k", 1, 0, caps).started);
  std::string keys[] = {"k"};
  CHECK(db->reset(keys, false) == 1);
  // The waiter comes again, last, and finds the slot free.
  CHECK(b->try_start(caps).started);
  a->finish();
}

TEST_CASE("store::sqlite::SqliteStore::collect_garbage forgets the commands that hold nothing") {
  ScratchStore db;
  auto rows = [&] {
    sqlite3* handle = nullptr;
    REQUIRE(sqlite3_open((db.directory() + "/test.db").c_str(), &handle) == SQLITE_OK);
    sqlite3_stmt* count = nullptr;
    sqlite3_prepare_v2(handle, "SELECT count(*) FROM runs", -1, &count, nullptr);
    sqlite3_step(count);
    int result = sqlite3_column_int(count, 0);
    sqlite3_finalize(count);
    sqlite3_close(handle);
    return result;
  };
  std::vector<core::RunCap> concurrency{{2, 0}};
  std::vector<core::RunCap> rate{{2, 1 * k_s}};
  auto a = db->run_slots(0);
  auto b = db->run_slots(0);
  CHECK(a->join("j", 1, 0, concurrency).started);
  CHECK(b->join("u", 1, 1 * k_s, rate).started);
  a->finish(); // no transaction: its row stays until someone looks
  b->finish();
  CHECK(rows() == 2);
  db->collect_garbage();
  CHECK(rows() == 1); // b holds its slot for a second after its exit
  db.now += 1 * k_s;
  db->collect_garbage();
  CHECK(rows() == 0);
}

TEST_CASE("store::SqliteRunSlots start nothing while the key is paused, as every other grant") {
  ScratchStore db;
  std::vector<core::RunCap> caps{{2, 0}};
  store::PauseStanding pause = db->pause("k", 3 * k_s);
  auto a = db->run_slots(0);
  store::StartAnswer answer = a->join("k", 1, 0, caps);
  CHECK_FALSE(answer.started);
  CHECK(answer.admission.admission == core::Admission::at);
  CHECK(answer.admission.at == pause.paused_until);
  CHECK(answer.admission.paused_until == pause.paused_until);
  db.now = pause.paused_until - 1;
  CHECK_FALSE(a->try_start(caps).started);
  db.now = pause.paused_until;
  CHECK(a->try_start(caps).started);
  // A pause that begins while the command runs holds the next one, not the running one.
  db->pause("k", 2 * k_s);
  auto b = db->run_slots(0);
  CHECK_FALSE(b->join("k", 1, 0, caps).started);
  a->finish();
}

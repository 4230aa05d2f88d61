#pragma once

#include "store/sqlite_database.hpp"
#include "store/sqlite_statement.hpp"
#include "store/store.hpp"

#include <memory>
#include <optional>

namespace ratelimit::store {

// Keys in one SQLite file shared by every process on the machine. Each call is a
// `BEGIN IMMEDIATE ... COMMIT` inside an flock on the file, with the system clock read
// once the lock is held.
class SqliteStore final : public Store {
public:
  SqliteStore(std::string path, core::Nanos lock_timeout);
  ~SqliteStore() override;

  core::Decision decide(std::string_view key, core::Algorithm algorithm,
                        std::span<const core::Limit> limits, core::Request request) override;
  void give_back(std::string_view key, core::Algorithm algorithm,
                 std::span<const core::Limit> limits, const core::Grant& grant) override;
  std::vector<KeyStatus> status(std::span<const std::string> keys) override;
  std::size_t reset(std::span<const std::string> keys, bool all) override;
  std::vector<std::string> collect_garbage() override;
  core::Nanos now() override;

private:
  struct Row {
    std::int64_t id = 0;
    core::KeyState state;
  };

  // Runs `body` as one write transaction under the lock; rolls back if it throws.
  template <typename Body>
  auto transaction(Body&& body);

  std::optional<Row> find(std::string_view key);
  // The row of `key`, created with a fresh state of `algorithm` when missing.
  Row find_or_create(std::string_view key, core::Algorithm algorithm);
  void write(const Row& row);
  void erase(std::int64_t id);

  SqliteDatabase m_database;
  Statement m_select;
  Statement m_insert;
  Statement m_update;
};

} // namespace ratelimit::store

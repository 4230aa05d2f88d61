#pragma once

#include "core/grant_log.hpp"
#include "store/sqlite/sqlite_statement.hpp"

#include <memory>

namespace ratelimit::store::sqlite {

// The statements of the grant_log table on one connection, each prepared on first use and
// kept for the connection's life: the logs of every key on it share them.
class GrantLogStatements {
public:
  explicit GrantLogStatements(sqlite3* db) : m_db(db) {}

  // Prepares those a grant runs, so that a decision can have them ready before it takes the
  // lock.
  void prepare_for_grants();

private:
  friend class SqliteGrantLog;
  Statement& prepared(std::unique_ptr<Statement>& slot, const char* sql);
  Statement& cumulative_through();
  Statement& append();
  Statement& forget_before();

  sqlite3* m_db;
  std::unique_ptr<Statement> m_cumulative_through;
  std::unique_ptr<Statement> m_time_reaching;
  std::unique_ptr<Statement> m_cumulative_before;
  std::unique_ptr<Statement> m_last_time;
  std::unique_ptr<Statement> m_append;
  std::unique_ptr<Statement> m_forget_before;
};

// The grant_log table of one key, inside the caller's transaction. Every question is one
// seek in an index of (key, cumulative) or (key, time).
class SqliteGrantLog final : public core::GrantLog {
public:
  SqliteGrantLog(GrantLogStatements& statements, std::int64_t key_id);
  ~SqliteGrantLog() override;

  std::optional<std::int64_t> cumulative_through(core::Nanos time) override;
  std::optional<core::Nanos> time_reaching(std::int64_t cumulative) override;
  std::optional<std::int64_t> cumulative_before(std::int64_t cumulative) override;
  std::optional<core::Nanos> last_time() override;
  void append(core::Nanos time, std::int64_t cumulative) override;
  void forget_before(std::int64_t cumulative) override;
  void remove(std::int64_t cumulative, std::int64_t cost) override;
  void clear() override;

private:
  std::optional<std::int64_t> single_value(Statement& statement);

  GrantLogStatements& m_statements;
  std::int64_t m_key_id;
};

} // namespace ratelimit::store::sqlite

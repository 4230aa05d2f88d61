#pragma once

#include "core/grant_log.hpp"
#include "store/sqlite_statement.hpp"

#include <memory>

namespace ratelimit::store {

// The grant_log table of one key, inside the caller's transaction. Every question is one
// seek in an index of (key, period, cumulative) or (key, period, time).
class SqliteGrantLog final : public core::GrantLog {
public:
  SqliteGrantLog(sqlite3* db, std::int64_t key_id);
  ~SqliteGrantLog() override;

  std::optional<std::int64_t> cumulative_through(core::Nanos period, core::Nanos time) override;
  std::optional<core::Nanos> time_reaching(core::Nanos period, std::int64_t cumulative) override;
  std::optional<std::int64_t> cumulative_before(core::Nanos period,
                                                std::int64_t cumulative) override;
  std::optional<core::Nanos> last_time(core::Nanos period) override;
  void append(core::Nanos period, core::Nanos time, std::int64_t cumulative) override;
  void forget_through(core::Nanos period, core::Nanos time) override;
  void remove(core::Nanos period, std::int64_t cumulative, std::int64_t cost) override;

private:
  std::optional<std::int64_t> single_value(Statement& statement);
  Statement& prepared(std::unique_ptr<Statement>& slot, const char* sql);

  sqlite3* m_db;
  std::int64_t m_key_id;
  std::unique_ptr<Statement> m_cumulative_through;
  std::unique_ptr<Statement> m_time_reaching;
  std::unique_ptr<Statement> m_cumulative_before;
  std::unique_ptr<Statement> m_last_time;
  std::unique_ptr<Statement> m_append;
  std::unique_ptr<Statement> m_forget_through;
};

} // namespace ratelimit::store

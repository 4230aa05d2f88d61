#include "store/sqlite/sqlite_grant_log.hpp"

namespace ratelimit::store::sqlite {

Statement& GrantLogStatements::prepared(std::unique_ptr<Statement>& slot, const char* sql) {
  // Prepared on first use: keys of the other algorithms never pay for these.
  if (!slot) {
    slot = std::make_unique<Statement>(m_db, sql);
  }
  return *slot;
}

// A grant asks where the window's horizon falls, forgets what lies before it and appends
// itself; a denial only asks (time_reaching, when the log is full).
void GrantLogStatements::prepare_for_grants() {
  cumulative_through();
  append();
  forget_before();
}

Statement& GrantLogStatements::cumulative_through() {
  return prepared(m_cumulative_through,
                  "SELECT cumulative FROM grant_log WHERE key_id = ?1 AND at <= ?2 "
                  "ORDER BY at DESC, cumulative DESC LIMIT 1");
}

Statement& GrantLogStatements::append() {
  return prepared(m_append, "INSERT INTO grant_log (key_id, cumulative, at) VALUES (?1, ?2, ?3)");
}

Statement& GrantLogStatements::forget_before() {
  return prepared(m_forget_before, "DELETE FROM grant_log WHERE key_id = ?1 AND cumulative < ?2");
}

SqliteGrantLog::SqliteGrantLog(GrantLogStatements& statements, std::int64_t key_id)
    : m_statements(statements), m_key_id(key_id) {}

SqliteGrantLog::~SqliteGrantLog() = default;

std::optional<std::int64_t> SqliteGrantLog::single_value(Statement& statement) {
  std::optional<std::int64_t> value;
  if (statement.step()) {
    value = statement.column_int(0);
  }
  statement.reset();
  return value;
}

std::optional<std::int64_t> SqliteGrantLog::cumulative_through(core::Nanos time) {
  Statement& statement = m_statements.cumulative_through();
  statement.bind(1, m_key_id).bind(2, time);
  return single_value(statement);
}

std::optional<core::Nanos> SqliteGrantLog::time_reaching(std::int64_t cumulative) {
  Statement& statement = m_statements.prepared(m_statements.m_time_reaching,
                                               "SELECT at FROM grant_log WHERE key_id = ?1 "
                                               "AND cumulative >= ?2 ORDER BY cumulative LIMIT 1");
  statement.bind(1, m_key_id).bind(2, cumulative);
  return single_value(statement);
}

std::optional<std::int64_t> SqliteGrantLog::cumulative_before(std::int64_t cumulative) {
  Statement& statement = m_statements.prepared(
      m_statements.m_cumulative_before, "SELECT cumulative FROM grant_log WHERE key_id = ?1 "
                                        "AND cumulative < ?2 ORDER BY cumulative DESC LIMIT 1");
  statement.bind(1, m_key_id).bind(2, cumulative);
  return single_value(statement);
}

std::optional<core::Nanos> SqliteGrantLog::last_time() {
  Statement& statement = m_statements.prepared(
      m_statements.m_last_time,
      "SELECT at FROM grant_log WHERE key_id = ?1 ORDER BY cumulative DESC LIMIT 1");
  statement.bind(1, m_key_id);
  return single_value(statement);
}

void SqliteGrantLog::append(core::Nanos time, std::int64_t cumulative) {
  m_statements.append().bind(1, m_key_id).bind(2, cumulative).bind(3, time).run();
}

void SqliteGrantLog::forget_before(std::int64_t cumulative) {
  m_statements.forget_before().bind(1, m_key_id).bind(2, cumulative).run();
}

void SqliteGrantLog::remove(std::int64_t cumulative, std::int64_t cost) {
  Statement remove_entry(m_statements.m_db,
                         "DELETE FROM grant_log WHERE key_id = ?1 AND cumulative = ?2");
  remove_entry.bind(1, m_key_id).bind(2, cumulative).run();
  // The cumulative cost is the primary key: shift the later entries through negative values
  // so that no intermediate row collides with another, whatever order SQLite updates in.
  Statement negate(m_statements.m_db, "UPDATE grant_log SET cumulative = -(cumulative - ?3) "
                                      "WHERE key_id = ?1 AND cumulative > ?2");
  negate.bind(1, m_key_id).bind(2, cumulative).bind(3, cost).run();
  Statement restore(m_statements.m_db, "UPDATE grant_log SET cumulative = -cumulative "
                                       "WHERE key_id = ?1 AND cumulative < 0");
  restore.bind(1, m_key_id).run();
}

void SqliteGrantLog::clear() {
  Statement clear_entries(m_statements.m_db, "DELETE FROM grant_log WHERE key_id = ?1");
  clear_entries.bind(1, m_key_id).run();
}

} // namespace ratelimit::store::sqlite

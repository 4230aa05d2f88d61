#include "store/sqlite/sqlite_statement.hpp"

namespace ratelimit::store::sqlite {

Statement::Statement(sqlite3* db, std::string_view sql) : m_db(db) {
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &m_statement, nullptr);
  if (rc != SQLITE_OK) {
    throw_sqlite_error(db, rc, "cannot read the database");
  }
}

Statement::~Statement() {
  sqlite3_finalize(m_statement);
}

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(m_statement, index, value);
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  // A zero-length blob must still be a blob, not NULL.
  sqlite3_bind_blob64(m_statement, index, bytes.empty() ? "" : bytes.data(), bytes.size(),
                      SQLITE_STATIC);
  return *this;
}

Statement& Statement::bind_text(int index, std::string_view text) {
  sqlite3_bind_text64(m_statement, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
  return *this;
}

Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(m_statement, index);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(m_statement);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc == SQLITE_DONE) {
    return false;
  }
  sqlite3_reset(m_statement);
  throw_sqlite_error(m_db, rc, "cannot read or write the database");
}

void Statement::run() {
  step();
  reset();
}

void Statement::reset() {
  sqlite3_reset(m_statement);
  sqlite3_clear_bindings(m_statement);
}

std::int64_t Statement::column_int(int index) const {
  return sqlite3_column_int64(m_statement, index);
}

std::string_view Statement::column_blob(int index) const {
  const void* data = sqlite3_column_blob(m_statement, index);
  int size = sqlite3_column_bytes(m_statement, index);
  return data ? std::string_view(static_cast<const char*>(data), static_cast<std::size_t>(size))
              : std::string_view();
}

bool Statement::column_is_null(int index) const {
  return sqlite3_column_type(m_statement, index) == SQLITE_NULL;
}

} // namespace ratelimit::store::sqlite

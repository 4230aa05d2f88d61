#pragma once

#include "store/sqlite/sqlite_error.hpp"

#include <cstdint>
#include <sqlite3.h>
#include <string>
#include <string_view>

namespace ratelimit::store::sqlite {

// A prepared statement, kept for the life of the connection and reset after each use.
class Statement {
public:
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::int64_t value);
  Statement& bind_blob(int index, std::string_view bytes);
  Statement& bind_text(int index, std::string_view text);
  Statement& bind_null(int index);

  // Advances to the next row; false when there is none. Throws StoreError on failure, with
  // the reason `throw_sqlite_error` finds.
  bool step();
  // Runs a statement that returns no rows, then resets it.
  void run();
  void reset();

  std::int64_t column_int(int index) const;
  std::string_view column_blob(int index) const;
  bool column_is_null(int index) const;

private:
  sqlite3* m_db;
  sqlite3_stmt* m_statement = nullptr;
};

} // namespace ratelimit::store::sqlite

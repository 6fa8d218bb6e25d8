#include "export/call_table_sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <string>

namespace asyncwatch {

namespace {

std::string create_table_sql() {
  std::string sql = "CREATE TABLE calls (";
  for (size_t i = 0; i < kCallColumnCount; ++i)
    sql += fmt::format("{}{} {}", i ? ", " : "", kCallColumns[i].name,
                       kCallColumns[i].type == CellType::Integer ? "INTEGER" : "TEXT");
  return sql + ")";
}

std::string insert_sql() {
  std::string sql = "INSERT INTO calls VALUES (";
  for (size_t i = 0; i < kCallColumnCount; ++i) sql += i ? ", ?" : "?";
  return sql + ")";
}

}  // namespace

SqliteCallSink::SqliteCallSink() {
  // The memdb VFS keeps the database as one buffer that finish() writes as it is (":memory:" would
  // be copied into one first: twice the memory).
  if (sqlite3_open_v2("file:asyncwatch-export?vfs=memdb", &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteExportError("cannot create the SQLite database: " + why);
  }
  try {
    create();
  } catch (...) {
    sqlite3_finalize(insert_);
    sqlite3_close(db_);
    throw;
  }
}

void SqliteCallSink::create() {
  exec(fmt::format("PRAGMA user_version = {}", kCallTableVersion).c_str());
  exec("CREATE TABLE asyncwatch_export (key TEXT PRIMARY KEY, value TEXT)");
  exec(fmt::format("INSERT INTO asyncwatch_export VALUES ('schema_version', '{}'), ('asyncwatch_version', '{}')",
                   kCallTableVersion, ASYNCWATCH_VERSION)
           .c_str());
  exec(create_table_sql().c_str());
  exec("BEGIN");
  const std::string sql = insert_sql();
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &insert_, nullptr) != SQLITE_OK)
    throw SqliteExportError(fmt::format("SQLite: {}", sqlite3_errmsg(db_)));
}

SqliteCallSink::~SqliteCallSink() {
  sqlite3_finalize(insert_);
  sqlite3_close(db_);
}

void SqliteCallSink::exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string why = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    throw SqliteExportError(fmt::format("SQLite: {}", why));
  }
}

void SqliteCallSink::row(const CallRow& cells) {
  for (size_t i = 0; i < kCallColumnCount; ++i) {
    const Cell& c = cells[i];
    const int n = static_cast<int>(i + 1);
    switch (c.kind) {
      case Cell::Kind::Null: sqlite3_bind_null(insert_, n); break;
      case Cell::Kind::Integer: sqlite3_bind_int64(insert_, n, c.integer); break;
      case Cell::Kind::Text:
        sqlite3_bind_text(insert_, n, c.text.data(), static_cast<int>(c.text.size()), SQLITE_TRANSIENT);
        break;
    }
  }
  const int rc = sqlite3_step(insert_);
  sqlite3_reset(insert_);
  if (rc != SQLITE_DONE) throw SqliteExportError(fmt::format("SQLite: {}", sqlite3_errmsg(db_)));
}

void SqliteCallSink::finish(std::FILE* out) {
  exec("COMMIT");
  sqlite3_int64 size = 0;
  unsigned char* image = sqlite3_serialize(db_, "main", &size, SQLITE_SERIALIZE_NOCOPY);
  if (!image) throw SqliteExportError("SQLite: the database has no image to write");
  const size_t n = std::fwrite(image, 1, static_cast<size_t>(size), out);  // owned by the database
  if (n != static_cast<size_t>(size)) throw SqliteExportError("cannot write the database");
}

}  // namespace asyncwatch

// `asyncwatch export --format sqlite`: the call table (export/call_table.h) as a SQLite database:
// table `calls` with the columns of kCallColumns (INTEGER or TEXT, NULL where not applicable),
// table `asyncwatch_export` (key, value: schema_version, asyncwatch_version) and PRAGMA
// user_version = the schema version (docs/export.md).
#pragma once

#include "export/call_table.h"

#include <cstdio>
#include <memory>
#include <stdexcept>

struct sqlite3;
struct sqlite3_stmt;

namespace asyncwatch {

class SqliteExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds the database in memory (one transaction), then writes it out as one file image: the
// output can be a pipe or a file replaced atomically, as every output of the command. Throws
// SqliteExportError.
class SqliteCallSink : public CallTableSink {
 public:
  SqliteCallSink();
  ~SqliteCallSink() override;
  SqliteCallSink(const SqliteCallSink&) = delete;
  SqliteCallSink& operator=(const SqliteCallSink&) = delete;

  void row(const CallRow& cells) override;
  // Commits and writes the database file's bytes to `out`.
  void finish(std::FILE* out);

 private:
  void create();
  void exec(const char* sql);
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
};

}  // namespace asyncwatch

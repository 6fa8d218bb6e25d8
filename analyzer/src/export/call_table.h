// `asyncwatch export`: every call record of traces as one table (docs/export.md has the columns,
// their meaning and the schema version). One row per completed call, in time order per trace.
// The columns are defined once (kCallColumns); each format is a CallTableSink.
#pragma once

#include "findings/analysis.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace asyncwatch {

inline constexpr int kCallTableVersion = 1;

enum class CellType { Integer, Text };
struct CallColumn {
  const char* name;
  CellType type;
};
// The columns of version 1, in order (docs/export.md).
inline constexpr CallColumn kCallColumns[] = {
    {"trace", CellType::Text},         {"pid", CellType::Integer},      {"tid", CellType::Integer},
    {"record", CellType::Text},        {"api", CellType::Text},         {"driver_api", CellType::Text},
    {"start_ns", CellType::Integer},   {"end_ns", CellType::Integer},   {"duration_ns", CellType::Integer},
    {"result", CellType::Integer},     {"stream_kind", CellType::Text}, {"stream", CellType::Text},
    {"direction", CellType::Text},     {"src_memory", CellType::Text},  {"dst_memory", CellType::Text},
    {"bytes", CellType::Integer},      {"kernel", CellType::Text},      {"flags", CellType::Text},
    {"stack_id", CellType::Integer},   {"finding", CellType::Text},     {"finding_rank", CellType::Integer},
    {"blocked_ns", CellType::Integer}, {"call_site", CellType::Text},   {"simulated", CellType::Integer},
};
inline constexpr size_t kCallColumnCount = sizeof(kCallColumns) / sizeof(kCallColumns[0]);

// One cell: absent (not applicable: an empty CSV cell, SQL NULL), a whole number or text. Text
// points into storage that lives until the sink's row() returns.
struct Cell {
  enum class Kind { Null, Integer, Text } kind = Kind::Null;
  int64_t integer = 0;
  std::string_view text;
  static Cell of(int64_t v) { return Cell{Kind::Integer, v, {}}; }
  static Cell of(std::string_view t) { return Cell{Kind::Text, 0, t}; }
};
using CallRow = Cell[kCallColumnCount];

class CallTableSink {
 public:
  virtual ~CallTableSink() = default;
  virtual void row(const CallRow& cells) = 0;
};

struct CallTableStats {
  uint64_t rows = 0;
  uint64_t traces = 0;
};

// Gives every call of `paths` to `sink`. A trace that cannot be read goes to `unreadable`
// (nothing of it is given) when that is given; else TraceError is thrown.
CallTableStats write_call_table(CallTableSink& sink, const std::vector<std::string>& paths, const Options& options,
                                std::vector<UnreadableTrace>* unreadable);

// The CSV form: a header row, then one line per row (RFC 4180 quoting).
class CsvCallSink : public CallTableSink {
 public:
  explicit CsvCallSink(std::FILE* out);
  void row(const CallRow& cells) override;

 private:
  std::FILE* out_;
  std::string line_;
};

// One CSV field: as it is when it holds no comma, quote, CR or LF; else quoted, quotes doubled.
std::string csv_field(std::string_view text);

}  // namespace asyncwatch

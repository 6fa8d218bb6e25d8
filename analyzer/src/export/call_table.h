// `asyncwatch export`: every call record of traces as one table (docs/export.md has the columns,
// their meaning and the schema version). One row per completed call, in time order per trace.
#pragma once

#include "findings/analysis.h"

#include <cstdio>
#include <string>
#include <vector>

namespace asyncwatch {

inline constexpr int kCallTableVersion = 1;

struct CallTableStats {
  uint64_t rows = 0;
  uint64_t traces = 0;
};

// Writes the CSV table (a header row, then the rows) of `paths` to `out`. A trace that cannot be
// read goes to `unreadable` (nothing of it is written) when given; else TraceError is thrown.
CallTableStats write_call_table_csv(std::FILE* out, const std::vector<std::string>& paths, const Options& options,
                                    std::vector<UnreadableTrace>* unreadable);

// One CSV field: as it is when it holds no comma, quote, CR or LF; else quoted, quotes doubled.
std::string csv_field(const std::string& text);

}  // namespace asyncwatch

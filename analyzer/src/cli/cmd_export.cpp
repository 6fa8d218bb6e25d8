// asyncwatch export --format csv|sqlite|parquet -o FILE TRACE_OR_DIR...
// Every call record as a table for one's own queries (export/call_table.h; docs/export.md).
#include "cli/commands.h"
#include "diagnostics.h"
#include "export/call_table.h"
#include "export/call_table_parquet.h"
#include "export/call_table_sqlite.h"
#include "read/trace_reader.h"
#include "report/output_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <memory>

namespace asyncwatch {

int cmd_export(const ExportArgs& args) {
  const bool sqlite = args.format == "sqlite", parquet = args.format == "parquet";
  if (!sqlite && !parquet && args.format != "csv") {
    print_error(fmt::format("export --format {}: csv, sqlite or parquet", args.format));
    return kExitInvalid;
  }
  if ((sqlite || parquet) && (args.output.empty() || args.output == "-") && isatty(STDOUT_FILENO)) {
    print_error(fmt::format("export --format {} writes a binary file: give -o FILE (or redirect standard output)",
                            args.format));
    return kExitInvalid;
  }
  TraceInputs inputs = expand_trace_inputs(args.inputs);
  std::unique_ptr<OutputFile> out = open_output(args.output);
  if (!out) return kExitInvalid;
  std::vector<UnreadableTrace> unreadable = inputs.unreadable;
  CallTableStats stats;
  const diagnostics::Timer timer;
  try {
    if (sqlite) {
      SqliteCallSink sink;
      stats = write_call_table(sink, inputs.paths, Options{}, &unreadable);
      if (stats.traces) sink.finish(out->stream());
    } else if (parquet) {
      ParquetCallSink sink(out->stream());
      stats = write_call_table(sink, inputs.paths, Options{}, &unreadable);
      if (stats.traces) sink.finish();
    } else {
      CsvCallSink sink(out->stream());
      stats = write_call_table(sink, inputs.paths, Options{}, &unreadable);
    }
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitInvalid;
  }
  for (const auto& u : unreadable) print_error(fmt::format("{}: {}", u.trace, u.error));
  if (diagnostics::verbose())
    diagnostics::step(fmt::format("{} rows of {} trace{} in {:.0f} ms", stats.rows, stats.traces,
                                  stats.traces == 1 ? "" : "s", timer.ms()));
  return commit_from_traces(*out, stats.traces, unreadable.size(), "export");
}

}  // namespace asyncwatch

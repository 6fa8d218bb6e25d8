// asyncwatch: which "async" CUDA calls were really synchronous, why, and where.
#include "cli/commands.h"
#include "diagnostics.h"

#include <fmt/format.h>
#include <iostream>

using namespace asyncwatch;

int main(int argc, char** argv) {
  CLI::App app{"asyncwatch " ASYNCWATCH_VERSION
               ": finds the asynchronous CUDA calls that ran synchronously, says why and where"};
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", ASYNCWATCH_VERSION);
  // Each subcommand's help lists the statuses it can exit with (docs/contracts.md).
  const std::string report_statuses =
      "0 fine; 1 a --fail-on finding exists (or --error-exitcode N); 2 invalid input or usage, no trace could be "
      "read, or the output could not be written; 3 the report was written but some traces could not be read "
      "(each is named); 4 no CUDA call of a traced process succeeded: no usable CUDA driver or device (use "
      "run --sim without a GPU); 5 the analysis failed (out of memory reading a module's debug information)";
  app.footer("Exit status: " + report_statuses + "; run passes on the program's own non-zero status.");
  CLI::App* version = app.add_subcommand("version", "Print the version");
  version->footer("Exit status: 0.");

  ReportArgs report_args;
  CLI::App* report = app.add_subcommand("report", "Report the findings of one or more traces (files or directories)");
  add_report_options(report, report_args, true);
  report->add_option("TRACE_OR_DIR", report_args.inputs, "Trace files, or directories of *.awtrace files")->required();
  report->footer("Exit status: " + report_statuses + ".");

  std::string dump_trace;
  CLI::App* dump = app.add_subcommand("dump", "Print the file header and every raw record of a trace, one per line");
  dump->add_option("TRACE", dump_trace, "The trace file")->required();
  dump->footer("Exit status: 0 fine; 2 the trace could not be read, or the output could not be written.");

  TimelineArgs timeline_args;
  CLI::App* timeline =
      app.add_subcommand("timeline", "Export a Chrome trace event JSON timeline (open it in Perfetto UI)");
  timeline->add_option("-o,--output", timeline_args.output,
                       "Output file (\"-\": standard output, the default; a regular file is replaced atomically, a "
                       "device, FIFO or socket written in place)");
  timeline
      ->add_option("--min-blocked-us", timeline_args.min_blocked_us,
                   "Calls blocked at least this long get the category \"blocked\"")
      ->capture_default_str();
  timeline->add_option("--format", timeline_args.format,
                       "json (Chrome trace event JSON) or perfetto (binary Perfetto trace); default: "
                       "perfetto when the output ends in .pftrace or .perfetto-trace, else json");
  timeline->add_option("--window", timeline_args.window,
                       "Only what overlaps T0:T1, in seconds since the earliest process start (e.g. 1.5:3)");
  timeline->add_flag("--findings-only", timeline_args.findings_only, "Only the calls of findings, and their GPU work");
  timeline
      ->add_option("--max-size-mib", timeline_args.max_size_mib,
                   "Write nothing (and say the expected size) when the timeline would be larger; 0: no limit")
      ->capture_default_str();
  timeline->add_option("TRACE_OR_DIR", timeline_args.inputs, "Trace files, or directories of *.awtrace files")
      ->required();
  timeline->footer(
      "Exit status: 0 fine; 2 invalid input or usage, no trace could be read, the timeline would be larger "
      "than --max-size-mib, or the output could not be written; 3 written, but some traces could not be read "
      "(each is named).");

  ExportArgs export_args;
  CLI::App* export_cmd = app.add_subcommand(
      "export",
      "Write every call record of traces as a table for your own queries (CSV, SQLite or Parquet; docs/export.md)");
  export_cmd->add_option("--format", export_args.format, "Table format")
      ->check(CLI::IsMember({"csv", "sqlite", "parquet"}))
      ->capture_default_str();
  export_cmd->add_option("-o,--output", export_args.output,
                         "Output file (\"-\": standard output, the default; a regular file is replaced atomically)");
  export_cmd->add_option("TRACE_OR_DIR", export_args.inputs, "Trace files, or directories of *.awtrace files")
      ->required();
  export_cmd->footer(
      "Exit status: 0 fine; 2 invalid input or usage, no trace could be read, or the output could not be "
      "written; 3 written, but some traces could not be read (each is named).");

  // -v on each command that reads traces: the analyzer's own steps and their times (diagnostics.h).
  bool verbose = false;
  for (CLI::App* sub : {report, timeline, export_cmd})
    sub->add_flag("-v,--verbose", verbose, "Say what asyncwatch does and how long each step takes, on standard error");

  RunArgs run_args;
  CLI::App* run = app.add_subcommand(
      "run",
      "Run a program under asyncwatch and print the report when it exits: asyncwatch run [options] -- PROGRAM ARGS...");
  run->add_flag(
      "--gpu-times", run_args.gpu_times,
      "Record when each copy, kernel and host function ran on the device (ASYNCWATCH_GPU_TIMES=1; costs a few "
      "microseconds per operation: docs/timeline.md)");
  run->add_flag("--summary", run_args.summary,
                "Summary mode (ASYNCWATCH_SUMMARY=1): calls repeated at one call site are folded into per-site "
                "counts, totals and a latency histogram in the process, with the first and slowest calls kept as "
                "records: the trace grows with the distinct call sites, not with the run's length; same findings");
  run->add_option("--trace-limit", run_args.trace_limit,
                  "Flight recorder (ASYNCWATCH_TRACE_LIMIT): keep the raw records of the last SIZE of the run (e.g. "
                  "64M, 256M, 1G; a ring of trace blocks reused oldest-first) plus the whole run's summary (as "
                  "--summary): findings and counts are the whole run's, the timeline the last window's");
  run->add_flag("--sim", run_args.sim, "Run on asyncwatch's simulated CUDA driver and runtime (no GPU needed)");
  run->add_option("--capture-range", run_args.capture_range,
                  "Record only inside these ranges: cudaProfilerApi (between cudaProfilerStart and cudaProfilerStop, "
                  "or their driver forms; torch.cuda.profiler.start/stop) or nvtx:NAME (inside every NVTX range of "
                  "that message) (ASYNCWATCH_CAPTURE_RANGE)");
  run->add_option("--delay", run_args.delay,
                  "Record nothing for the first SECONDS of the program (ASYNCWATCH_DELAY; with --capture-range, "
                  "ranges opened before are ignored until then)");
  run->add_option("--duration", run_args.duration,
                  "Stop recording SECONDS after recording began (ASYNCWATCH_DURATION)");
  run->add_option("-o,--output-dir", run_args.output_dir,
                  "Directory for the traces (default: a new asyncwatch-PROGRAM-TIME-XXXXXX directory here, mode 0700)");
  add_report_options(run, run_args.report, false);
  run->add_option(
      "--report-output", run_args.report.output,
      "Write the report to this file (as report -o; \"-\": standard output). Default: standard output "
      "for text; for json, sarif and codequality, report.json / report.sarif / report.codequality.json in the "
      "trace directory, so that standard "
      "output stays the program's");
  run->footer("Exit status: the program's own when it is not 0; else " + report_statuses +
              " (also when the program's CUDA runtime, linked into it, found no driver or cannot run on the "
              "simulator).");
  run->add_flag("-v,--verbose", verbose, "Say what asyncwatch does and how long each step takes, on standard error");
  run->prefix_command();
  run->allow_extras();

  // `run ... -- PROGRAM ARGS`: everything after the first "--" is the program, untouched.
  std::vector<std::string> program;
  int parsed_argc = argc;
  if (argc > 1 && std::string(argv[1]) == "run") {
    for (int i = 2; i < argc; ++i)
      if (std::string(argv[i]) == "--") {
        program.assign(argv + i + 1, argv + argc);
        parsed_argc = i;
        break;
      }
  }

  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitInvalid;
  }

  diagnostics::init(verbose);
  try {
    if (*version) {
      std::cout << ASYNCWATCH_VERSION << '\n';
      return kExitOk;
    }
    if (*report) return cmd_report(report_args);
    if (*dump) return cmd_dump(dump_trace);
    if (*timeline) return cmd_timeline(timeline_args);
    if (*export_cmd) return cmd_export(export_args);
    if (*run) {
      run_args.command = run->remaining();
      if (!run_args.command.empty() && run_args.command.front() == "--")
        run_args.command.erase(run_args.command.begin());
      // Before the program (or "--"), anything that looks like an option is one we do not know:
      // an error, not the program's name.
      if (!run_args.command.empty() && run_args.command.front().size() > 1 && run_args.command.front()[0] == '-') {
        print_error(fmt::format("run: unknown option {} (asyncwatch run --help; the program comes after --)",
                                run_args.command.front()));
        return kExitInvalid;
      }
      run_args.command.insert(run_args.command.end(), program.begin(), program.end());
      if (run_args.command.empty()) {
        std::cerr << "asyncwatch run: no program given (asyncwatch run [options] -- PROGRAM ARGS...)\n";
        return kExitInvalid;
      }
      return cmd_run(run_args);
    }
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitInvalid;
  }
  return kExitInvalid;
}

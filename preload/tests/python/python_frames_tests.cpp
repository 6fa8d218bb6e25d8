// python_frames without a real interpreter: a process with no Python, fake CPythons from garbage to
// consistent (fake_python.cpp, each loaded in a child process so every search starts afresh), the
// exported-symbol lookup, and the line table decoder on hand-built tables.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "asyncwatch/python_lines.h"
#include "stacks/dynamic_symbols.h"
#include "stacks/python_frames.h"

using namespace asyncwatch;
using namespace asyncwatch::python_frames;
using python_lines::LineTableFormat;

namespace {

// Runs `body` in a child process; returns what it returned ("" = passed), or how it died.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string result = body();
    ssize_t ignored = write(fds[1], result.data(), result.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "child killed by signal " + std::to_string(WTERMSIG(status)) + " " + out;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child exited " + std::to_string(WEXITSTATUS(status));
  return out;
}

std::string fake_path(bool versionless) { return versionless ? AW_FAKE_PYTHON_OLD : AW_FAKE_PYTHON; }

// In a child: loads the fake CPython `path` in `variant`, tells python_frames, runs `check`.
std::string with_fake_at(const std::string& path, const char* variant, const std::function<std::string()>& check) {
  return in_child([&]() -> std::string {
    setenv("AW_FAKE_PYTHON", variant, 1);
    if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return std::string("dlopen: ") + dlerror();
    note_objects_loaded();
    return check();
  });
}

std::string with_fake(const char* variant, const std::function<std::string()>& check, bool versionless = false) {
  return with_fake_at(fake_path(versionless), variant, check);
}

const char* end_name(WalkEnd e) {
  static const char* names[] = {"no-python", "no-thread-state", "complete", "depth-limit", "invalid"};
  return names[static_cast<int>(e)];
}

// Expects `capture` to return `frames` frames ending with `end` and the library in `availability`.
std::function<std::string()> expect_walk(uint32_t frames, WalkEnd end, Availability availability,
                                         const char* detail_part = "") {
  return [=]() -> std::string {
    PythonFrame f[16];
    WalkEnd e;
    uint32_t n = capture(f, 16, &e);
    Status s = status();
    std::string got = std::to_string(n) + " frames, " + end_name(e) + ", availability " +
                      std::to_string(static_cast<int>(s.availability)) + " (" + s.detail + ")";
    if (n != frames || e != end || s.availability != availability || !std::strstr(s.detail, detail_part)) {
      return "got " + got;
    }
    return "";
  };
}

std::string text(const Buffer& b) { return std::string(b.data, b.size); }

}  // namespace

TEST(PythonFrames, NothingInAProcessWithoutPythonAndOneSearchOnly) {
  EXPECT_EQ(in_child([]() -> std::string {
              PythonFrame f[8];
              WalkEnd e;
              if (capture(f, 8, &e) != 0 || e != WalkEnd::kNoPython) return "first capture found something";
              for (int i = 0; i < 1000; ++i) capture(f, 8, &e);
              if (find_interpreter() != Availability::kNoPython) return "find_interpreter";
              Status s = status();
              if (s.availability != Availability::kNoPython || s.searches != 1) {
                return "searched " + std::to_string(s.searches) + " times";
              }
              PythonFrame d{reinterpret_cast<uint64_t>(f), 0, 0};
              CodeDescription desc;
              if (describe_code(d, desc)) return "described a code object without Python";
              note_objects_loaded();  // after a dlopen: one more search
              capture(f, 8, &e);
              capture(f, 8, &e);
              if (status().searches != 2) return "note_objects_loaded did not search again once";
              return "";
            }),
            "");
}

TEST(PythonFrames, RefusesWhatIsNotASupportedCPython) {
  EXPECT_EQ(with_fake("", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "before 3.10"), true), "");
  EXPECT_EQ(with_fake("zero", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "PyCode_Type")), "");
  EXPECT_EQ(with_fake("garbage", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported)), "");
  EXPECT_EQ(with_fake("py39", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "not supported")), "");
  EXPECT_EQ(with_fake("py315", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "not supported")), "");
  EXPECT_EQ(with_fake("alpha", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "alpha")), "");
  EXPECT_EQ(with_fake("py313t", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "free-threaded")), "");
  EXPECT_EQ(with_fake("py313-offsets", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "differ")), "");
  EXPECT_EQ(with_fake("py314t", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "free-threaded")), "");
  EXPECT_EQ(with_fake("py314-offsets", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "differ")), "");
  EXPECT_EQ(with_fake("wrong-code-size", expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported, "PyCode_Type")),
            "");
}

TEST(PythonFrames, NoFramesWithoutAUsableThreadState) {
  EXPECT_EQ(with_fake("uninitialized", expect_walk(0, WalkEnd::kNoPython, Availability::kReady)), "");
  EXPECT_EQ(with_fake("no-thread-state", expect_walk(0, WalkEnd::kNoThreadState, Availability::kReady)), "");
  EXPECT_EQ(with_fake("wrong-thread", expect_walk(0, WalkEnd::kNoThreadState, Availability::kReady)), "");
  EXPECT_EQ(with_fake("other-interpreter", expect_walk(0, WalkEnd::kNoThreadState, Availability::kReady)), "");
  EXPECT_EQ(with_fake("finalizing-other", expect_walk(0, WalkEnd::kNoThreadState, Availability::kReady)), "");
  EXPECT_EQ(with_fake("finalizing-self", expect_walk(3, WalkEnd::kComplete, Availability::kReady)), "");
}

// Unreadable memory where a pointer leads: the first walk on the thread state reads it through
// process_vm_readv, sees it, and turns Python frames off instead of faulting.
TEST(PythonFrames, UnreadablePointersTurnItOffWithoutAFault) {
  for (const char* variant : {"tss-unmapped", "frame-unmapped", "code-unmapped"}) {
    EXPECT_EQ(with_fake(variant,
                        [] {
                          std::string r = expect_walk(0, WalkEnd::kInvalid, Availability::kUnsupported, "unreadable")();
                          if (!r.empty()) return r;
                          return expect_walk(0, WalkEnd::kNoPython, Availability::kUnsupported)();  // and stays off
                        }),
              "")
        << variant;
  }
}

TEST(PythonFrames, CyclesAndBadInstructionsStop) {
  EXPECT_EQ(with_fake("shim-cycle", expect_walk(0, WalkEnd::kInvalid, Availability::kReady)), "");
  EXPECT_EQ(with_fake("instr-out-of-range", expect_walk(0, WalkEnd::kInvalid, Availability::kReady)), "");
  EXPECT_EQ(with_fake("frame-cycle",
                      [] {
                        std::string r = expect_walk(16, WalkEnd::kDepthLimit, Availability::kReady)();  // checked walk
                        return r.empty() ? expect_walk(16, WalkEnd::kDepthLimit, Availability::kReady)() : r;  // plain
                      }),
            "");
}

// A checked walk that stopped at an invalid pointer proves nothing about the layout: its frames
// are returned, but describe_code (plain loads) refuses them until a walk completes.
TEST(PythonFrames, NoDescriptionBeforeTheLayoutIsProven) {
  EXPECT_EQ(with_fake("invalid-after-one",
                      []() -> std::string {
                        std::string r = expect_walk(1, WalkEnd::kInvalid, Availability::kReady)();
                        if (!r.empty()) return r;
                        PythonFrame f[4];
                        WalkEnd e;
                        if (capture(f, 4, &e) != 1) return "second walk";
                        char file[64], qual[64], table[64];
                        CodeDescription d;
                        d.filename = {file, sizeof file};
                        d.qualname = {qual, sizeof qual};
                        d.line_table = {table, sizeof table};
                        if (describe_code(f[0], d)) return "described a frame of an unproven layout";
                        if (capture(f, 1, &e) != 1 || e != WalkEnd::kDepthLimit) return "walk of one frame";
                        if (!describe_code(f[0], d)) return "not described after a walk reached the depth limit";
                        return text(d.qualname) == "f" ? "" : "qualname " + text(d.qualname);
                      }),
            "");
}

TEST(PythonFrames, WalksAndDescribesAConsistentInterpreter) {
  EXPECT_EQ(
      with_fake("valid",
                []() -> std::string {
                  PythonFrame first[8], plain[8], checked[8], two[2];
                  WalkEnd e1, e2, e3, e4;
                  uint32_t n1 = capture(first, 8, &e1);  // through process_vm_readv
                  uint32_t n2 = capture(plain, 8, &e2);  // plain loads
                  uint32_t n3 = capture_checked(checked, 8, &e3);
                  uint32_t n4 = capture(two, 2, &e4);
                  if (n1 != 3 || n2 != 3 || n3 != 3 || e1 != WalkEnd::kComplete || e2 != WalkEnd::kComplete ||
                      e3 != WalkEnd::kComplete) {
                    return "walks found " + std::to_string(n1) + "/" + std::to_string(n2) + "/" + std::to_string(n3);
                  }
                  if (std::memcmp(first, plain, sizeof first[0] * 3) ||
                      std::memcmp(first, checked, sizeof first[0] * 3)) {
                    return "the walks differ";
                  }
                  if (n4 != 2 || e4 != WalkEnd::kDepthLimit) return "max 2: " + std::to_string(n4) + " " + end_name(e4);
                  const char* names[] = {"inner", "Outer.middle", "<module>"};
                  const int lines[] = {33, 21, 12};
                  for (int i = 0; i < 3; ++i) {
                    char file[64], qual[64], table[64];
                    CodeDescription d;
                    d.filename = {file, sizeof file};
                    d.qualname = {qual, sizeof qual};
                    d.line_table = {table, sizeof table};
                    if (!describe_code(first[i], d)) return "frame " + std::to_string(i) + " not described";
                    int line = python_lines::line_of(d.line_table_format, reinterpret_cast<uint8_t*>(table),
                                                     d.line_table.size, d.first_line, first[i].instr);
                    if (text(d.filename) != "/fake/train.py" || text(d.qualname) != names[i] || line != lines[i] ||
                        d.instructions != 8 || d.line_table_format != LineTableFormat::kCpython311) {
                      return "frame " + std::to_string(i) + ": " + text(d.filename) + " " + text(d.qualname) + " " +
                             std::to_string(line);
                    }
                  }
                  PythonFrame stale = first[0];
                  stale.code_check ^= 1;
                  CodeDescription d;
                  if (describe_code(stale, d)) return "described a code object with another fingerprint";
                  char five[5];
                  d.filename = {five, sizeof five};
                  if (!describe_code(first[0], d) || text(d.filename) != "/fake" || !d.filename.truncated ||
                      d.filename.needed != 14) {
                    return "ASCII truncation: " + text(d.filename) + ", needed " + std::to_string(d.filename.needed);
                  }
                  return "";
                }),
      "");
}

// 3.14: f_executable is a tagged _PyStackRef, frames owned by the interpreter (3) or the C stack (4)
// and a frame whose f_executable is None are no Python code, and _Py_DebugOffsets is 3.14's.
TEST(PythonFrames, WalksACpython314) {
  EXPECT_EQ(
      with_fake_at(AW_FAKE_PYTHON_314, "valid",
                   []() -> std::string {
                     PythonFrame checked[8], plain[8];
                     WalkEnd e1, e2;
                     uint32_t n1 = capture(checked, 8, &e1), n2 = capture(plain, 8, &e2);
                     Status s = status();
                     if (n1 != 3 || n2 != 3 || e1 != WalkEnd::kComplete || e2 != WalkEnd::kComplete ||
                         s.version_hex != 0x030e07f0) {
                       return "walks found " + std::to_string(n1) + "/" + std::to_string(n2) + " (" + s.detail + ")";
                     }
                     const char* names[] = {"inner", "Outer.middle", "<module>"};
                     const int lines[] = {33, 21, 12};
                     for (int i = 0; i < 3; ++i) {
                       if ((checked[i].code & 1) != 0) return "the tag bit was kept";
                       char file[64], qual[64], table[64];
                       CodeDescription d;
                       d.filename = {file, sizeof file};
                       d.qualname = {qual, sizeof qual};
                       d.line_table = {table, sizeof table};
                       if (!describe_code(plain[i], d)) return "frame " + std::to_string(i) + " not described";
                       int line = python_lines::line_of(d.line_table_format, reinterpret_cast<uint8_t*>(table),
                                                        d.line_table.size, d.first_line, plain[i].instr);
                       if (text(d.qualname) != names[i] || line != lines[i]) {
                         return "frame " + std::to_string(i) + ": " + text(d.qualname) + " " + std::to_string(line);
                       }
                     }
                     return "";
                   }),
      "");
}

TEST(PythonFrames, TextOfEveryStringKind) {
  EXPECT_EQ(with_fake("text-kinds",
                      []() -> std::string {
                        PythonFrame f[4];
                        if (capture(f, 4) != 2) return "no frames";
                        char file[64], qual[64], table[64];
                        CodeDescription d;
                        d.filename = {file, sizeof file};
                        d.qualname = {qual, sizeof qual};
                        d.line_table = {table, sizeof table};
                        if (!describe_code(f[0], d)) return "frame 0 not described";
                        if (text(d.filename) != "/\xc3\xa9.py" || text(d.qualname) != "f\xf0\x9f\x98\x80") {
                          return "latin-1/UCS-4: " + text(d.filename) + " " + text(d.qualname);
                        }
                        if (!describe_code(f[1], d)) return "frame 1 not described";
                        // UCS-2; the surrogate escape of byte 0xff is that byte; a lone surrogate is U+FFFD.
                        if (text(d.filename) != "\xe6\x97\xa5\xe6\x9c\xac\xff\xef\xbf\xbd" || d.filename.truncated) {
                          return "UCS-2: " + text(d.filename);
                        }
                        // Cut at a character boundary: "f" and not the first bytes of the emoji.
                        d.qualname = {qual, 4};
                        if (!describe_code(f[0], d) || text(d.qualname) != "f" || !d.qualname.truncated ||
                            d.qualname.needed != 5 || d.filename.needed != 6 || d.filename.truncated) {
                          return "truncation: " + text(d.qualname) + ", needed " + std::to_string(d.qualname.needed);
                        }
                        // Sizes only (what a caller that copies straight into a trace record asks first).
                        CodeDescription sizes;
                        if (!describe_code(f[1], sizes) || sizes.filename.size != 0 || sizes.filename.needed != 10 ||
                            !sizes.filename.truncated || sizes.qualname.needed != 1 || !sizes.qualname.truncated ||
                            sizes.line_table.size != 0 || sizes.line_table.needed != 8 || !sizes.line_table.truncated) {
                          return "sizes: needed " + std::to_string(sizes.filename.needed) + "/" +
                                 std::to_string(sizes.qualname.needed) + "/" + std::to_string(sizes.line_table.needed);
                        }
                        return "";
                      }),
            "");
}

TEST(DynamicSymbols, FindsExportedDataInOneObjectWithEitherHashTable) {
  for (bool old : {false, true}) {  // the versionless fake is linked with a SysV hash table only
    EXPECT_EQ(in_child([old]() -> std::string {
                setenv("AW_FAKE_PYTHON", "zero", 1);
                void* h = dlopen(fake_path(old).c_str(), RTLD_NOW | RTLD_LOCAL);
                if (!h) return std::string("dlopen: ") + dlerror();
                struct Want {
                  uint64_t address = 0;
                  bool data = false;
                  const char* in = "";
                } want;
                dynamic_symbols::for_each_object(
                    [](const dynamic_symbols::Object& o, void* arg) {
                      auto* w = static_cast<Want*>(arg);
                      dynamic_symbols::Symbol s;
                      if (!o.find("_PyRuntime", &s)) return false;
                      *w = {s.address, s.is_data, o.name()};
                      return true;
                    },
                    &want);
                if (want.address != reinterpret_cast<uint64_t>(dlsym(h, "_PyRuntime")) || !want.data ||
                    !std::strstr(want.in, "fake_python")) {
                  return std::string("_PyRuntime found at the wrong place, in ") + want.in;
                }
                dynamic_symbols::Symbol none;
                if (dynamic_symbols::for_each_object(
                        [](const dynamic_symbols::Object& o, void* arg) {
                          return o.find("aw_no_such_symbol_anywhere", static_cast<dynamic_symbols::Symbol*>(arg));
                        },
                        &none)) {
                  return "found a symbol that does not exist";
                }
                return "";
              }),
              "")
        << (old ? "SysV hash table" : "GNU hash table");
  }
}

// --- the line table decoder -------------------------------------------------------------------

TEST(PythonLines, Cpython310) {
  // (bytes, line delta): 6 bytes at +1, an empty entry moving +2, 4 bytes without line, 2 at +1.
  std::vector<uint8_t> t = {6, 1, 0, 2, 4, 0x80, 2, 1};
  auto line = [&](int32_t instr) {
    return python_lines::line_of(LineTableFormat::kCpython310, t.data(), t.size(), 10, instr);
  };
  EXPECT_EQ(line(-1), 10);  // not started: the first line
  EXPECT_EQ(line(0), 11);
  EXPECT_EQ(line(2), 11);
  EXPECT_EQ(line(3), -1);
  EXPECT_EQ(line(4), -1);
  EXPECT_EQ(line(5), 14);
  EXPECT_EQ(line(6), -1);          // past the end
  std::vector<uint8_t> odd = {6};  // truncated pair
  EXPECT_FALSE(python_lines::for_each_range(LineTableFormat::kCpython310, odd.data(), odd.size(), 1,
                                            [](uint32_t, uint32_t, const python_lines::SourceLocation&) {}));
}

TEST(PythonLines, Cpython311EveryForm) {
  std::vector<uint8_t> t = {
      0x80 | (3 << 3) | 1,
      0x25,  // short form 3, 2 units: column 3*8+2 = 26, end 26+5
      0x80 | (11 << 3) | 0,
      4,
      9,  // one line, +1: columns 4-9
      0x80 | (13 << 3) | 2,
      7,  // no columns, 3 units, svarint 7 = -3
      0x80 | (14 << 3) | 0,
      0x40 | 24,
      2,
      1,
      5,
      0,                     // long: svarint 152 = +76 (two chunks), end +1, column 4, no end column
      0x80 | (15 << 3) | 1,  // no location, 2 units
      0x80 | (0 << 3) | 0,
      0x10,  // short form 0: column 1, end 1, the line of before
      0x80 | (12 << 3) | 0,
      0,
      3,  // one line, +2
  };
  auto at = [&](int32_t i) { return python_lines::locate(LineTableFormat::kCpython311, t.data(), t.size(), 100, i); };
  EXPECT_EQ(at(0).line, 100);
  EXPECT_EQ(at(1).column, 26);
  EXPECT_EQ(at(1).end_column, 31);
  EXPECT_EQ(at(2).line, 101);
  EXPECT_EQ(at(2).column, 4);
  EXPECT_EQ(at(2).end_column, 9);
  EXPECT_EQ(at(3).line, 98);
  EXPECT_EQ(at(5).line, 98);
  EXPECT_EQ(at(5).column, -1);
  EXPECT_EQ(at(6).line, 174);
  EXPECT_EQ(at(6).end_line, 175);
  EXPECT_EQ(at(6).column, 4);
  EXPECT_EQ(at(6).end_column, -1);
  EXPECT_EQ(at(7).line, -1);
  EXPECT_EQ(at(8).line, -1);
  EXPECT_EQ(at(9).line, 174);
  EXPECT_EQ(at(9).column, 1);
  EXPECT_EQ(at(10).line, 176);
  EXPECT_EQ(at(11).line, -1);  // past the end
}

TEST(PythonLines, MalformedTablesStopAtTheirEnd) {
  // Each is its own heap block of exactly its size: a read past the end is an ASan error.
  const std::vector<std::vector<uint8_t>> bad = {
      {0x80 | (14 << 3), 0x40},                                               // varint continues past the end
      {0x80 | (3 << 3)},                                                      // short form without its byte
      {0x80 | (10 << 3), 1},                                                  // one line form without its end column
      {0x05, 0x80 | (15 << 3)},                                               // not the start of an entry
      {0x80 | (14 << 3), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f, 0, 0, 0},  // a varint beyond 32 bits
  };
  for (const auto& b : bad) {
    std::vector<uint8_t> exact(b);
    exact.shrink_to_fit();
    EXPECT_FALSE(python_lines::for_each_range(LineTableFormat::kCpython311, exact.data(), exact.size(), 1,
                                              [](uint32_t, uint32_t, const python_lines::SourceLocation&) {}));
    EXPECT_EQ(python_lines::line_of(LineTableFormat::kCpython311, exact.data(), exact.size(), 1, 0) >= -1, true);
  }
  uint8_t one = 0x80;
  EXPECT_EQ(python_lines::line_of(LineTableFormat::kUnknown, &one, 1, 1, 0), -1);
  EXPECT_EQ(python_lines::line_of(LineTableFormat::kCpython311, nullptr, 0, 1, 0), -1);
}

// The source lines a report reads (the fingerprint's normalized line): only files below the
// source root, only regular files, each opened without blocking and read once per report
// (docs/contracts.md, "What a trace can make the analyzer read").
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace asyncwatch {

class SourceLines {
 public:
  // `root`: an absolute directory (source_root()); "" reads nothing.
  explicit SourceLines(std::string root);
  ~SourceLines();
  SourceLines(const SourceLines&) = delete;
  SourceLines& operator=(const SourceLines&) = delete;

  // Line `line` of `file` will be asked for: want() every line first, then line() reads each
  // file once for all of its lines. A line asked for without want() reads its file again.
  void want(const std::string& file, int line);
  // The text of the line with all white space removed; "" when the file is outside the root,
  // not a regular file, over 64 MiB, the line over 4 KiB, or it cannot be read.
  std::string line(const std::string& file, int line);

  // Files opened for reading so far (each read once, whatever the number of lines asked).
  uint64_t files_read() const { return files_read_; }

 private:
  void read(const std::string& file);
  std::string root_;
  int root_fd_ = -1;
  std::map<std::string, std::set<int>> wanted_;
  std::map<std::pair<std::string, int>, std::string> lines_;
  std::set<std::string> done_;
  uint64_t files_read_ = 0;
};

}  // namespace asyncwatch

// The one way the asyncwatch command writes an output file (`timeline -o`, `report -o`,
// `run --report-output`; docs/contracts.md, "Output files"):
//   - "-" (or no -o): standard output.
//   - a path that exists and is not a regular file: written in place, never replaced,
//     truncated or unlinked: a character device (/dev/null, a terminal), a FIFO (opened like
//     `cat > FIFO`: waits for a reader), a Unix socket (connected). /dev/stdout, /dev/stderr,
//     /dev/fd/N and /proc/self/fd/N name our own descriptor N, which is written directly (its
//     offset and append mode are the shell's). A block device or a directory is refused.
//   - a regular file (or a name that does not exist yet): written to a new temporary file in the
//     same directory (O_CREAT|O_EXCL|O_NOFOLLOW, an unpredictable name ".NAME.XXXXXXXXXXXX.tmp",
//     mode 0600 while written), then given the old file's permission bits (a new file: 0666
//     less the umask) and, when root, its owner and group, and renamed over the name: a reader
//     sees the old content or the whole new one, never a part. Nothing is left when the command
//     fails or is interrupted (SIGINT, SIGTERM, SIGHUP remove the temporary file).
//   - symbolic links, in the name itself or in any directory on the way, are followed only when
//     they belong to the user running the command or to root (a link planted by another user,
//     as in a world-writable directory, is refused); a symlink to a regular file is never
//     replaced: its target is, atomically, in the target's directory. A dangling link is refused.
#pragma once

#include <cstdio>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>

namespace asyncwatch {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// For `run -o DIR`: the directory `path` names (symbolic links on the way trusted as above),
// created with mode 0755 when missing (*created). Returns a descriptor of it (O_DIRECTORY).
// Throws OutputError (a path that is not a directory, or a link not followed).
int open_output_directory(const std::string& path, bool* created);

class OutputFile {
 public:
  // Opens `path` as described above. Throws OutputError naming the path and the reason.
  explicit OutputFile(const std::string& path);
  ~OutputFile();  // without commit(): a temporary file is removed, the target is untouched
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* stream() { return stream_; }
  // The same, as a std::ostream (text reports are written through it, not built in memory).
  std::ostream& ostream();
  // Flushes everything and, for a regular file, renames the temporary file over the target.
  // Throws OutputError (the temporary file is removed and the target untouched).
  void commit();

  // How the path is written (tests, messages).
  enum class Mode { Stdout, Descriptor, InPlace, Replace };
  Mode mode() const { return mode_; }

 private:
  void discard() noexcept;
  class Buffer : public std::streambuf {  // unbuffered here: the FILE buffers
   public:
    explicit Buffer(std::FILE* f) : f_(f) {}

   protected:
    int_type overflow(int_type c) override {
      if (c == traits_type::eof()) return traits_type::not_eof(c);
      return std::fputc(c, f_) == EOF ? traits_type::eof() : c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
      return static_cast<std::streamsize>(std::fwrite(s, 1, static_cast<size_t>(n), f_));
    }

   private:
    std::FILE* f_;
  };
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> ostream_;
  std::string path_;
  Mode mode_ = Mode::Stdout;
  std::FILE* stream_ = nullptr;
  int dir_fd_ = -1;       // Replace: the directory holding the target and the temporary file
  std::string name_;      // Replace: the target's name in that directory
  std::string tmp_name_;  // Replace: the temporary file's name, "" once renamed or removed
  unsigned mode_bits_ = 0;
  bool keep_owner_ = false;
  unsigned uid_ = 0, gid_ = 0;
};

}  // namespace asyncwatch

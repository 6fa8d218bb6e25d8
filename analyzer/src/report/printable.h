// The one sanitizer for text taken from a trace (or from a directory listing) on its way to a
// terminal or a text file: command lines, executables, host and device names, module paths,
// kernel and thread names, function and file names from symbols, cuda_env, trace paths. A
// trace is input: a name in it must not clear the screen, recolour it or forge a line.
// JSON and SARIF do not use it: there the JSON library escapes, and the strings stay exact.
#pragma once

#include <string>
#include <string_view>

namespace asyncwatch {

// `text` with every byte that a terminal would act on written as a visible escape:
//   \n \t \r, other control characters and DEL as \xNN (ESC: \x1b), a backslash as \\,
//   bytes that are not valid UTF-8 as \xNN each, and the Unicode controls that reorder or
//   break lines or act as C1 escapes (U+0080-U+009F, U+061C, U+200E/F, U+2028/9,
//   U+202A-U+202E, U+2066-U+2069) as \uNNNN. `quoted`: also " as \" (for "..." fields, as
//   `dump` prints them). Printable text, UTF-8 included, passes unchanged.
std::string printable(std::string_view text, bool quoted = false);

}  // namespace asyncwatch

#pragma once

#include <iosfwd>
#include <string>

namespace mlw {

/// Writes `prompt` to `err` and reads one line from standard input; with `echo` false and a
/// terminal on standard input, the typed characters are not shown (passwords, passphrases).
std::string read_terminal_line(std::ostream& err, const std::string& prompt, bool echo);

}  // namespace mlw

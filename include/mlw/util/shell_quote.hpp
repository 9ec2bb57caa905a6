#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// Quotes one word for a POSIX shell so that it arrives as exactly that word: every command
/// mlw sends to a remote shell is built from words passed through this function.
std::string shell_quote(std::string_view word);

/// Quotes each word and joins them with spaces: a command line for a POSIX shell.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace mlw

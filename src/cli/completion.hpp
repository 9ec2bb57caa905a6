#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "mlw/context.hpp"

namespace mlw::cli {

/// `mlw __complete WORD… CURRENT`: prints what may follow the words typed after `mlw`, one
/// "value<TAB>description" a line, or ":files" for the shell's own file completion. Reads the
/// command tree, the project's targets and the history index (read-only); never fails.
int complete(const CLI::App& root, Context& ctx, const std::vector<std::string>& words);

/// The completion script of `shell` (bash, zsh, fish); throws mlw::UsageError otherwise.
std::string completion_script(const std::string& shell);

}  // namespace mlw::cli

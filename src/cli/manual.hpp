#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace mlw::cli {

/// The manual page mlw(1) in roff, written from the command tree under `root` (every command,
/// option and example) and mlw's tables of settings: `mlw __man`, run at build time.
std::string man_page(const CLI::App& root);

}  // namespace mlw::cli

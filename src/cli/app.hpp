#pragma once

#include <CLI/CLI.hpp>

#include "mlw/context.hpp"

namespace mlw::cli {

/// Options every command accepts, bound by CLI11 and applied to the Context before a command runs.
struct GlobalOptions {
  std::string project;
  std::string output;
  int verbose = 0;
  bool quiet = false;
  bool debug = false;             ///< --debug, as -vv
  bool only_show_errors = false;  ///< --only-show-errors, as -q
  bool no_color = false;
};

/// Builds the whole command tree on `app`.
void register_app(CLI::App& app, Context& ctx, GlobalOptions& globals);

/// Adds the global options (--project, -o, -v, -q, --debug, --only-show-errors, --no-color).
void add_global_options(CLI::App& command, GlobalOptions& globals);

/// Applies the global options to the context and configures logging; called by every command.
void apply_globals(Context& ctx, const GlobalOptions& globals);

/// `mlw project …`.
void register_project(CLI::App& app, Context& ctx);
/// `mlw computetarget …`.
void register_computetarget(CLI::App& app, Context& ctx);
/// `mlw experiment …` (submit takes the global options itself: they may stand before SCRIPT).
void register_experiment(CLI::App& app, Context& ctx, GlobalOptions& globals);
/// `mlw history …`.
void register_history(CLI::App& app, Context& ctx);
/// `mlw config …`.
void register_config(CLI::App& app, Context& ctx);
/// `mlw data …` (src/cli/data.cpp).
void register_data(CLI::App& app, Context& ctx);
/// `mlw notebook …` (src/cli/notebook.cpp).
void register_notebook(CLI::App& app, Context& ctx);
/// `mlw completion bash|zsh|fish` and the hidden `mlw __complete` the scripts call.
void register_completion(CLI::App& app, Context& ctx);

/// The "Examples:" footer of a command's help.
std::string examples(std::initializer_list<const char*> lines);
/// The same, from a list (a kind's attach examples).
std::string examples(const std::vector<std::string>& lines);

}  // namespace mlw::cli

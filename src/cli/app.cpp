#include "cli/app.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "cli/help.hpp"
#include "mlw/config/user_config.hpp"
#include "mlw/output/output.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/settings.hpp"

namespace mlw::cli {

std::string examples(std::initializer_list<const char*> lines) {
  return examples(std::vector<std::string>(lines.begin(), lines.end()));
}

std::string examples(const std::vector<std::string>& lines) {
  std::string out = "\nExamples:\n";
  for (const auto& line : lines) out += "  " + line + "\n";
  return out;
}

namespace {

/// The settings of the user's and the project's config files and the environment, with the
/// options given on this command line over them.
std::map<std::string, ConfigValue> load_config(Context& ctx, const GlobalOptions& globals) {
  std::optional<fs::path> project_file;
  std::string project_display;
  try {
    const Project& project = ctx.project();
    project_file = project.state_dir() / "config.yaml";
    project_display = project.display(*project_file);
  } catch (const Error&) {
    // Outside a project (project create, config, completion): no project settings.
  }
  auto config = effective_config(ctx.config_dir / "config.yaml", project_file, project_display);
  if (!globals.output.empty()) {
    config["defaults.output"] = {
        check_user_value(find_user_key("defaults.output"), globals.output, "-o"), "flag: -o"};
  }
  if (globals.no_color) config["core.no_color"] = {"true", "flag: --no-color"};
  if (globals.only_show_errors || globals.quiet) {
    config["core.only_show_errors"] = {"true",
                                       globals.quiet ? "flag: -q" : "flag: --only-show-errors"};
  }
  return config;
}

bool is_true(const Context& ctx, const std::string& key) {
  const auto it = ctx.config.find(key);
  return it != ctx.config.end() && it->second.value == "true";
}

}  // namespace

void apply_globals(Context& ctx, const GlobalOptions& globals) {
  if (!globals.project.empty()) ctx.project_dir = globals.project;
  ctx.config = load_config(ctx, globals);
  const auto format = ctx.config.find("defaults.output");
  ctx.output_format =
      parse_output_format(format != ctx.config.end() ? format->second.value : "table");
  check_settings();
  ctx.quiet = is_true(ctx, "core.only_show_errors");
  const int verbose = globals.debug ? 2 : globals.verbose;
  const char* no_color = std::getenv("NO_COLOR");
  const bool colors = !is_true(ctx, "core.no_color") && !(no_color && *no_color);
  ctx.color = ctx.stderr_is_terminal && colors;
  ctx.stdout_color = ctx.stdout_is_terminal && colors;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_st>(
      ctx.color ? spdlog::color_mode::automatic : spdlog::color_mode::never);
  auto logger = std::make_shared<spdlog::logger>("mlw", sink);
  logger->set_pattern("mlw: %^%l%$: %v");
  logger->set_level(ctx.quiet      ? spdlog::level::err
                    : verbose >= 2 ? spdlog::level::trace
                    : verbose == 1 ? spdlog::level::debug
                                   : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void add_global_options(CLI::App& command, GlobalOptions& globals) {
  command
      .add_option("--project", globals.project,
                  "The project folder (default: found from here upward)")
      ->type_name("DIR");
  command
      .add_option("-o,--output", globals.output,
                  "Output format: table, json, jsonc, tsv, yaml or none (or $MLW_OUTPUT)")
      ->type_name("FORMAT");
  command.add_flag("-v,--verbose", globals.verbose,
                   "More diagnostics on stderr: -v debug, -vv trace");
  command.add_flag("--debug", globals.debug, "The same as -vv");
  command.add_flag("-q,--quiet", globals.quiet, "Only errors on stderr");
  command.add_flag("--only-show-errors", globals.only_show_errors, "The same as -q");
  command.add_flag("--no-color", globals.no_color, "No colors (also: NO_COLOR=1)");
}

void register_app(CLI::App& app, Context& ctx, GlobalOptions& globals) {
  app.formatter(std::make_shared<HelpFormatter>(app, help_width()));
  app.set_version_flag("--version", std::string("mlw ") + MLW_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.option_defaults()->always_capture_default(false);
  add_global_options(app, globals);
  app.footer(examples({"mlw project create -n demo && cd demo",
                       "mlw experiment submit -c local train.py --epochs 3", "mlw history list",
                       "mlw history info -r demo_1732200000000 -o json"}));
  app.parse_complete_callback([&ctx, &globals] { apply_globals(ctx, globals); });
  register_project(app, ctx);
  register_computetarget(app, ctx);
  register_experiment(app, ctx, globals);
  register_history(app, ctx);
  register_data(app, ctx);
  register_notebook(app, ctx);
  register_config(app, ctx);
  register_completion(app, ctx);
}

}  // namespace mlw::cli

#include "cli/app.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "mlw/output/output.hpp"
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

void apply_globals(Context& ctx, const GlobalOptions& globals) {
  if (!globals.project.empty()) ctx.project_dir = globals.project;
  std::string format = globals.output;
  if (format.empty()) {
    const char* env = std::getenv("MLW_OUTPUT");
    format = env && *env ? env : "table";
  }
  ctx.output_format = parse_output_format(format);
  check_settings();
  ctx.quiet = globals.quiet;
  const char* no_color = std::getenv("NO_COLOR");
  ctx.color = ctx.stderr_is_terminal && !globals.no_color && !(no_color && *no_color);
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_st>(
      ctx.color ? spdlog::color_mode::automatic : spdlog::color_mode::never);
  auto logger = std::make_shared<spdlog::logger>("mlw", sink);
  logger->set_pattern("mlw: %^%l%$: %v");
  logger->set_level(globals.quiet          ? spdlog::level::err
                    : globals.verbose >= 2 ? spdlog::level::trace
                    : globals.verbose == 1 ? spdlog::level::debug
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
                  "Output format: table, json, tsv or yaml (or $MLW_OUTPUT)")
      ->type_name("FORMAT");
  command.add_flag("-v,--verbose", globals.verbose,
                   "More diagnostics on stderr: -v debug, -vv trace");
  command.add_flag("-q,--quiet", globals.quiet, "Only errors on stderr");
  command.add_flag("--no-color", globals.no_color, "No colors (also: NO_COLOR=1)");
}

void register_app(CLI::App& app, Context& ctx, GlobalOptions& globals) {
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
}

}  // namespace mlw::cli

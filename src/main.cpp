#include <unistd.h>

#include <iostream>

#include "cli/app.hpp"
#include "mlw/util/fs.hpp"

namespace {

int usage_exit_code(CLI::App& app) {
  // A submit that could not start is 125, as docker run; every other command uses 2.
  try {
    if (app.get_subcommand("experiment")->get_subcommand("submit")->parsed()) return 125;
  } catch (const CLI::Error&) {
  }
  return mlw::exit_code::k_usage;
}

}  // namespace

int main(int argc, char** argv) {
  mlw::Context ctx;
  ctx.out = &std::cout;
  ctx.err = &std::cerr;
  ctx.stdin_is_terminal = ::isatty(0);
  ctx.stdout_is_terminal = ::isatty(1);
  ctx.stderr_is_terminal = ::isatty(2);
  ctx.clock = std::make_shared<mlw::SystemClock>();
  ctx.processes = std::make_shared<mlw::SystemProcessRunner>();
  std::error_code ec;
  ctx.working_dir = std::filesystem::current_path(ec);
  ctx.self_exe = std::filesystem::read_symlink("/proc/self/exe", ec);

  CLI::App app{"mlw — run Python training scripts on any compute target and keep the history of every run", "mlw"};
  mlw::cli::GlobalOptions globals;
  mlw::cli::register_app(app, ctx, globals);
  try {
    ctx.config_dir = mlw::user_config_directory();
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mlw: error: " << e.what() << " (see: mlw " << "--help)\n";
    return usage_exit_code(app);
  } catch (const mlw::Error& e) {
    std::cerr << "mlw: error: " << e.what() << "\n";
    return e.code() == mlw::exit_code::k_command_default ? ctx.failure_code : e.code();
  } catch (const std::exception& e) {
    std::cerr << "mlw: error: " << e.what() << "\n";
    return ctx.failure_code;
  }
  std::cout.flush();
  return ctx.exit_status;
}

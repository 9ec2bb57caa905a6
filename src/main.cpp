#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "cli/app.hpp"
#include "cli/completion.hpp"
#include "cli/manual.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace {

/// The innermost command that was recognised, e.g. "computetarget attach local".
CLI::App* deepest_parsed(CLI::App* app) {
  for (CLI::App* sub : app->get_subcommands()) return deepest_parsed(sub);
  return app;
}

std::string command_path(CLI::App* app) {
  std::string path;
  for (CLI::App* at = app; at && at->get_parent(); at = at->get_parent()) {
    path = at->get_name() + (path.empty() ? "" : " " + path);
  }
  return path;
}

/// One line for a parse error: what was wrong, a "did you mean" for a mistyped command, and
/// where to read the command's help.
std::string parse_error_line(CLI::App& app, const CLI::ParseError& e,
                             const std::vector<std::string>& args) {
  CLI::App* at = deepest_parsed(&app);
  std::string message = e.what();
  // CLI11's sentences begin with a capital ("The following argument was not expected"); mlw's
  // own lines do not.
  if (message.size() > 1 && message[0] >= 'A' && message[0] <= 'Z' && message[1] >= 'a' &&
      message[1] <= 'z') {
    message[0] = static_cast<char>(message[0] - 'A' + 'a');
  }
  const auto subcommands = at->get_subcommands({});
  if (!subcommands.empty() && at->get_subcommands().empty()) {
    std::vector<std::string> names;
    for (const CLI::App* sub : subcommands) names.push_back(sub->get_name());
    std::string given;
    const std::string here = command_path(at);
    // The first word after the recognised command that is not an option.
    std::size_t depth = here.empty() ? 0 : mlw::split(here, ' ').size();
    std::size_t words = 0;
    for (const auto& arg : args) {
      if (!arg.empty() && arg[0] == '-') continue;
      if (words++ == depth) {
        given = arg;
        break;
      }
    }
    message = given.empty()
                  ? "a command is required: " + mlw::join(names, ", ")
                  : "unknown command \"" + given + "\"" + mlw::did_you_mean(given, names) +
                        "; commands: " + mlw::join(names, ", ");
  }
  const std::string path = command_path(at);
  return message + " (see: mlw " + (path.empty() ? "" : path + " ") + "--help)";
}

int usage_exit_code(CLI::App& app) {
  // A submit that could not start is 125, as docker run; every other command uses 2.
  auto codes = mlw::CommandCodes::Plain;
  try {
    if (app.get_subcommand("experiment")->get_subcommand("submit")->parsed()) {
      codes = mlw::CommandCodes::Submit;
    }
  } catch (const CLI::Error&) {
  }
  return mlw::exit_code_of(mlw::exit_code::k_usage, codes);
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);  // a closed pipe or socket is an error to report, not a kill
  mlw::Context ctx;
  ctx.out = &std::cout;
  ctx.err = &std::cerr;
  ctx.stdin_is_terminal = ::isatty(0);
  ctx.stdout_is_terminal = ::isatty(1);
  ctx.stderr_is_terminal = ::isatty(2);
  ctx.clock = std::make_shared<mlw::SystemClock>();
  ctx.processes = std::make_shared<mlw::SystemProcessRunner>();
  ctx.connector = std::make_shared<mlw::SystemConnector>();
  ctx.executors = mlw::kind_executors();
  std::error_code ec;
  ctx.working_dir = std::filesystem::current_path(ec);

  CLI::App app{
      "mlw — run Python training scripts on any compute target and keep the history of every run",
      "mlw"};
  mlw::cli::GlobalOptions globals;
  mlw::cli::register_app(app, ctx, globals);
  if (argc >= 2 && std::string_view(argv[1]) == "__complete") {
    // The completion scripts' helper: the words are the user's half-typed command, not ours.
    return mlw::cli::complete(app, ctx, std::vector<std::string>(argv + 2, argv + argc));
  }
  if (argc == 2 && std::string_view(argv[1]) == "__man") {  // the build writes mlw.1 with it
    std::cout << mlw::cli::man_page(app);
    return 0;
  }
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
    std::cerr << "mlw: error: "
              << parse_error_line(app, e, std::vector<std::string>(argv + 1, argv + argc)) << "\n";
    return usage_exit_code(app);
  } catch (const mlw::Error& e) {
    std::cerr << "mlw: error: " << e.what() << "\n";
    return mlw::exit_code_of(e.code(), ctx.codes);
  } catch (const std::exception& e) {
    std::cerr << "mlw: error: " << e.what() << "\n";
    return mlw::exit_code_of(mlw::exit_code::k_command_default, ctx.codes);
  }
  std::cout.flush();
  return ctx.exit_status;
}

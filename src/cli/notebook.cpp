#include "mlw/api/notebook.hpp"
#include "cli/app.hpp"

namespace mlw::cli {

void register_notebook(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand(
      "notebook", "Jupyter with a kernel per run configuration, its cells run as runs");
  group->footer(examples({"mlw notebook start", "mlw notebook kernels --user"}));
  group->require_subcommand(1);

  auto start_request = std::make_shared<api::NotebookStartRequest>();
  auto* start = group->add_subcommand(
      "start", "Start Jupyter here (127.0.0.1, a token) with the project's kernels");
  start->add_option_function<int>(
      "--port", [start_request](int port) { start_request->port = port; },
      "Jupyter's port (default: the first free of 8888-8897)");
  start->add_flag("--no-browser", start_request->no_browser, "Do not open a browser");
  start->footer(examples({"mlw notebook start", "mlw notebook start --port 9000 --no-browser"}));
  start->callback(
      [&ctx, start_request] { ctx.exit_status = api::notebook_start(ctx, *start_request); });

  auto user = std::make_shared<bool>(false);
  auto* kernels = group->add_subcommand(
      "kernels", "Write and list the kernel specs (\"PROJECT CONFIG\") without starting Jupyter");
  kernels->add_flag(
      "--user", *user,
      "Into your Jupyter data folder, for JupyterLab and VS Code (default: .mlw/jupyter)");
  kernels->footer(examples({"mlw notebook kernels", "mlw notebook kernels --user"}));
  kernels->callback([&ctx, user] { api::notebook_kernels(ctx, *user); });

  struct KernelArgs {
    std::string run_config, connection_file;
  };
  auto args = std::make_shared<KernelArgs>();
  auto* kernel = group->add_subcommand("kernel", "What Jupyter runs for a kernel of mlw's");
  kernel->group("");  // Jupyter's, not a user's: left out of help
  kernel->add_option("-c,--run-config", args->run_config, "The run configuration")->required();
  kernel->add_option("-f,--connection-file", args->connection_file, "Jupyter's connection file")
      ->required();
  kernel->callback([&ctx, args] {
    ctx.exit_status = api::notebook_kernel(ctx, args->run_config, args->connection_file);
  });
}

}  // namespace mlw::cli

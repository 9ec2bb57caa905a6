#pragma once

// `mlw notebook` (docs/notebooks.md): Jupyter with a kernel per run configuration of the
// project, named "PROJECT NAME", whose cells run on that configuration's target as runs.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mlw/context.hpp"

namespace mlw::api {

/// One kernel spec mlw writes for Jupyter: a run configuration of the project.
struct KernelSpec {
  std::string name;              ///< Jupyter's kernel name, mlw-PROJECT-CONFIG (lowercase)
  std::string display_name;      ///< "PROJECT CONFIG", as Workbench named them
  std::string run_config;        ///< the run configuration (its Target runs the kernel)
  std::filesystem::path folder;  ///< where its kernel.json is
};

/// `mlw notebook kernels [--user]`: writes a kernel spec per run configuration into the
/// project's .mlw/jupyter (or, `user`, into the user's Jupyter data folder, for JupyterLab and
/// VS Code), removes those of configurations that are gone, and lists them.
std::vector<KernelSpec> notebook_kernels(Context& ctx, bool user);

/// What `mlw notebook start` takes.
struct NotebookStartRequest {
  std::optional<int> port;  ///< --port (default: the first free of 8888-8897)
  bool no_browser = false;  ///< --no-browser
};
/// `mlw notebook start`: the kernel specs, then Jupyter (Debian's jupyter-notebook) in the
/// project folder on 127.0.0.1 with a random token; replaces this process.
int notebook_start(Context& ctx, const NotebookStartRequest& request);

/// `mlw notebook kernel -c CONFIG -f CONNECTION_FILE`: what Jupyter starts for a kernel of
/// mlw's. The kernel (python -m mlw.kernel) runs as a run on CONFIG's target; each cell it
/// executes becomes a run of the history; ends with the run (canceled when Jupyter stops this
/// process). Returns the run's exit code.
int notebook_kernel(Context& ctx, const std::string& run_config,
                    const std::filesystem::path& connection_file);

}  // namespace mlw::api

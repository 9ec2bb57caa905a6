#include "mlw/api/project.hpp"

#include <fmt/format.h>

#include "mlw/config/compute_file.hpp"
#include "mlw/config/names.hpp"
#include "mlw/config/run_config.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::api {

const std::vector<std::pair<std::string, std::string>>& project_templates() {
  static const std::vector<std::pair<std::string, std::string>> templates = {
      {"blank", "examples/hello"},
      {"pytorch-mnist", "examples/pytorch-mnist"},
      {"tensorflow-mnist", "examples/tensorflow-mnist"},
  };
  return templates;
}

namespace {

std::string_view embedded(const std::string& path) {
  for (const auto& file : embedded_files()) {
    if (file.path == path) return file.contents;
  }
  throw Error("internal: file " + path + " is not embedded in this build");
}

constexpr std::string_view k_spark_dependencies =
    "# Spark packages for runs with Framework: PySpark (ignored otherwise).\n"
    "# Workbench format: configuration (Spark settings), repositories (Maven), packages.\n"
    "configuration: {}\n"
    "repositories: []\n"
    "packages: []\n";

constexpr std::string_view k_gitignore =
    "# mlw's run history and caches stay on this machine.\n"
    ".mlw/\n"
    "outputs/\n";

}  // namespace

void create_project(Context& ctx, const CreateProjectRequest& request) {
  validate_name(request.name, "project name");
  std::string folder;
  std::vector<std::string> names;
  for (const auto& [name, source] : project_templates()) {
    names.push_back(name);
    if (name == request.template_name) folder = source;
  }
  if (folder.empty()) {
    throw UsageError(fmt::format("unknown template \"{}\"; templates: {}{}", request.template_name,
                                 join(names, ", "), did_you_mean(request.template_name, names)));
  }
  const fs::path parent =
      request.parent ? fs::absolute(expand_user(*request.parent)) : ctx.working_dir;
  const fs::path root = parent / request.name;
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_empty(root, ec)) {
    throw Error(fmt::format("{} already exists and is not empty; choose another name or -p PATH",
                            root.string()));
  }
  // -p names where the project goes; a folder that is not there yet is made (as `git init
  // PATH` does), and removed again when the project cannot be written.
  fs::path made;  // the outermost folder made here, if any
  if (!fs::exists(parent, ec)) {
    for (fs::path at = parent; !at.empty() && !fs::exists(at, ec); at = at.parent_path()) {
      made = at;
    }
    make_directories(parent);
  } else if (!fs::is_directory(parent, ec)) {
    throw Error(fmt::format("{} is not a folder (given with -p)", parent.string()));
  }

  ComputeConfig local;
  local.type = "local";
  ComputeConfig docker;
  docker.type = "docker";
  docker.base_docker_image = "python:3.11-slim";
  const std::vector<std::pair<std::string, std::string>> files = {
      {"aml_config/local.compute", render_compute(local, "local")},
      {"aml_config/local.runconfig", render_run_config(default_run_config("local"), "local")},
      {"aml_config/docker.compute", render_compute(docker, "docker")},
      {"aml_config/docker.runconfig", render_run_config(default_run_config("docker"), "docker")},
      {"aml_config/conda_dependencies.yml",
       std::string(embedded(folder + "/conda_dependencies.yml"))},
      {"aml_config/spark_dependencies.yml", std::string(k_spark_dependencies)},
      {".amlignore", std::string(embedded("examples/amlignore"))},
      {".gitignore", std::string(k_gitignore)},
      {"train.py", std::string(embedded(folder + "/train.py"))},
  };
  // Everything is written into a hidden sibling first, then renamed into place at once.
  const fs::path staging = parent / ("." + request.name + ".mlw-new");
  fs::remove_all(staging, ec);
  try {
    for (const auto& [path, text] : files) {
      make_directories((staging / path).parent_path());
      atomic_write_file(staging / path, text, path == "train.py" ? 0755 : 0644);
    }
    if (fs::exists(root, ec)) fs::remove(root, ec);
    if (::rename(staging.c_str(), root.c_str()) != 0) {
      throw Error("cannot create " + root.string() + ": " + errno_text(errno));
    }
  } catch (...) {
    fs::remove_all(staging, ec);
    if (!made.empty()) fs::remove_all(made, ec);
    throw;
  }
  nlohmann::ordered_json written = nlohmann::ordered_json::array();
  for (const auto& [path, text] : files) written.push_back(path);
  ctx.output().print_object({{"project", request.name},
                             {"path", root.string()},
                             {"template", request.template_name},
                             {"files", written}});
  if (!ctx.quiet && !ctx.output().structured()) {
    *ctx.err << fmt::format("Next: cd {} && mlw experiment submit -c local train.py\n",
                            root.string());
  }
}

}  // namespace mlw::api

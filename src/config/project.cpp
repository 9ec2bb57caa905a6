#include "mlw/config/project.hpp"

#include <algorithm>

#include "mlw/util/error.hpp"

namespace mlw {

namespace fs = std::filesystem;

fs::path Project::compute_path(const std::string& name) const {
  return config_dir() / (name + ".compute");
}

fs::path Project::run_config_path(const std::string& name) const {
  return config_dir() / (name + ".runconfig");
}

namespace {
std::vector<std::string> names_with_extension(const fs::path& folder, const std::string& ext) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() == ext && entry.path().stem().string()[0] != '.') {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

std::vector<std::string> Project::compute_names() const {
  return names_with_extension(config_dir(), ".compute");
}

std::vector<std::string> Project::run_config_names() const {
  return names_with_extension(config_dir(), ".runconfig");
}

std::string Project::display(const fs::path& path) const {
  const auto relative = path.lexically_relative(root);
  if (relative.empty() || relative.native().starts_with("..")) return path.string();
  return relative.string();
}

Project find_project(const fs::path& start, const std::optional<fs::path>& explicit_dir) {
  std::error_code ec;
  if (explicit_dir) {
    const fs::path root = fs::weakly_canonical(fs::absolute(*explicit_dir), ec);
    if (!fs::is_directory(root / "aml_config", ec)) {
      throw Error("no aml_config/ folder in " + root.string() +
                  " (given with --project); create a project there with: mlw project create -n "
                  "NAME -p " +
                  root.parent_path().string());
    }
    return {root, root.filename().string()};
  }
  const fs::path from = fs::weakly_canonical(fs::absolute(start), ec);
  for (fs::path dir = from;; dir = dir.parent_path()) {
    if (fs::is_directory(dir / "aml_config", ec)) return {dir, dir.filename().string()};
    if (dir == dir.parent_path()) break;
  }
  throw Error("no aml_config/ folder found in " + from.string() +
              " or any folder above it; create a project with 'mlw project create -n NAME' or "
              "pass --project DIR");
}

}  // namespace mlw

#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlw {

/// A project: a folder with an `aml_config/` folder in it.
struct Project {
  std::filesystem::path root;  ///< absolute path of the project folder
  std::string name;            ///< the folder's name, used in run ids
  /// Where its history and caches are when not `<root>/.mlw` (a rerun reads a stored
  /// snapshot's files as its root, and keeps its state in the project's own .mlw).
  std::filesystem::path state{};

  /// `<root>/aml_config`.
  std::filesystem::path config_dir() const { return root / "aml_config"; }
  /// `<root>/.mlw`: run history and caches.
  std::filesystem::path state_dir() const { return state.empty() ? root / ".mlw" : state; }
  /// `aml_config/<name>.compute`.
  std::filesystem::path compute_path(const std::string& name) const;
  /// `aml_config/<name>.runconfig`.
  std::filesystem::path run_config_path(const std::string& name) const;
  /// Names of the compute targets (`*.compute`), sorted.
  std::vector<std::string> compute_names() const;
  /// Names of the run configurations (`*.runconfig`), sorted.
  std::vector<std::string> run_config_names() const;
  /// A path inside the project as shown in messages, e.g. "aml_config/x.compute".
  std::string display(const std::filesystem::path& path) const;
};

/// Finds the project: `explicit_dir` when given (it must hold aml_config/), else the nearest
/// folder at or above `start` that holds aml_config/. Throws mlw::Error saying where it looked.
Project find_project(const std::filesystem::path& start,
                     const std::optional<std::filesystem::path>& explicit_dir);

}  // namespace mlw

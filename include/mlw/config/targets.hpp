#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlw/config/compute_file.hpp"
#include "mlw/config/project.hpp"
#include "mlw/config/run_config.hpp"

namespace mlw {

/// Loads `aml_config/<name>.compute`, logging its warnings; an unknown name fails with the
/// known names and the nearest one.
ComputeConfig load_compute(const Project& project, const std::string& name);

/// The target's current settings (to find the secrets it references): nothing when it has no
/// file, or when its file no longer parses (reported as a warning).
std::optional<ComputeConfig> current_compute(const Project& project, const std::string& name);

/// Loads `aml_config/<name>.runconfig`, logging its warnings; `ignored` receives the names of
/// accepted-but-ignored keys present. An unknown name fails with the known names.
RunConfig load_run_config(const Project& project, const std::string& name,
                          std::vector<std::string>* ignored = nullptr);

/// A name given to -c: a run configuration's Target, else a target's name.
std::string target_of_name(const Project& project, const std::string& name);

}  // namespace mlw

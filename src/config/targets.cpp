#include "mlw/config/targets.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "mlw/config/names.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

[[noreturn]] void unknown(const std::string& what, const std::string& name,
                          const std::vector<std::string>& known, const std::string& hint) {
  throw Error(fmt::format("no {} named \"{}\" in aml_config/{}; known: {}{}", what, name,
                          did_you_mean(name, known), known.empty() ? "none" : join(known, ", "),
                          hint));
}

ConfigDocument load_document(const Project& project, const fs::path& path) {
  ConfigDocument doc = load_config_file(path, project.display(path));
  return doc;
}

void log_warnings(const ConfigDocument& doc) {
  for (const auto& warning : doc.warnings) spdlog::warn("{}", warning);
}

}  // namespace

ComputeConfig load_compute(const Project& project, const std::string& name) {
  const fs::path path = project.compute_path(name);
  if (name.empty() || name.find('/') != std::string::npos || !fs::exists(path)) {
    unknown("compute target", name, project.compute_names(),
            "; attach one with: mlw computetarget attach " + compute_kind_names("|") + " -n NAME");
  }
  ConfigDocument doc = load_document(project, path);
  ComputeConfig config = parse_compute(doc);
  log_warnings(doc);
  return config;
}

std::optional<ComputeConfig> current_compute(const Project& project, const std::string& name) {
  if (!fs::exists(project.compute_path(name))) return std::nullopt;
  try {
    return load_compute(project, name);
  } catch (const Error& e) {
    spdlog::warn("{}", e.what());
    return std::nullopt;
  }
}

RunConfig load_run_config(const Project& project, const std::string& name,
                          std::vector<std::string>* ignored) {
  const fs::path path = project.run_config_path(name);
  if (name.empty() || name.find('/') != std::string::npos || !fs::exists(path)) {
    unknown("run configuration", name, project.run_config_names(),
            "; each attached target has one of its name");
  }
  ConfigDocument doc = load_document(project, path);
  RunConfig config = parse_run_config(doc, ignored);
  log_warnings(doc);
  return config;
}

std::string target_of_name(const Project& project, const std::string& name) {
  if (!fs::exists(project.run_config_path(name))) return name;
  const RunConfig config = load_run_config(project, name);
  return config.target.empty() ? name : config.target;
}

}  // namespace mlw

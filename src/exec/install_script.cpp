// The words of install.sh (src/exec/install.sh), the environment's build script: what it says for
// each problem the image may have, decided here where the project's files are known.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "mlw/config/run_config.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The python version a `python=X.Y[.Z]` pin names, when it names an exact one (digits and dots).
std::string exact_pin(const std::string& pin) {
  const bool exact = !pin.empty() && std::all_of(pin.begin(), pin.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
  return exact ? pin : std::string();
}

/// The wheels the pip: section names by file (a word ending in .whl).
std::vector<std::string> named_wheels(const std::string& requirements) {
  std::vector<std::string> wheels;
  for (const auto& line : split(requirements, '\n')) {
    const std::string word(trim(line));
    if (word.ends_with(".whl") && word.find(' ') == std::string::npos) wheels.push_back(word);
  }
  return wheels;
}

}  // namespace

std::vector<std::string> install_arguments(const RunPlan& plan, const EnvironmentSpec& env) {
  const std::string file = plan.run_config.conda_dependencies_file;
  const std::string image = plan.compute.base_docker_image;
  std::vector<std::string> words;
  words.push_back(plan.run_config.framework == "PySpark"
                      ? no_spark_submit_message(plan.record.run_config, "the image " + image)
                      : "");
  words.push_back(env.conda_packages.empty()
                      ? ""
                      : fmt::format("the base image {} has no conda, so the conda packages of {} "
                                    "cannot be installed: {}; use a base image with conda (e.g. "
                                    "continuumio/miniconda3), or list them under pip: in {}",
                                    image, file, join(env.conda_packages, ", "), file));
  words.push_back(exact_pin(env.python_pin));
  words.push_back(fmt::format(
      "{} asks for python={} but the base image {} has no conda to install it, and its python3 is ",
      file, env.python_pin, image));
  words.push_back(
      "; use a base image with conda or with that python, or change the python line of " + file);
  words.push_back(
      fmt::format("the base image {} has neither conda nor pip, so the pip: section of "
                  "{} cannot be installed; use a base image with conda or pip, or "
                  "empty the pip: section",
                  image, file));
  words.push_back(plan.notebook_kernel
                      ? fmt::format("the base image {} has no ipykernel for the notebook kernel, "
                                    "and neither conda nor pip to install it; add ipykernel to "
                                    "the image, or use a base image with conda or pip",
                                    image)
                      : "");
  for (auto& wheel : named_wheels(env.requirements)) words.push_back(std::move(wheel));
  return words;
}

}  // namespace mlw

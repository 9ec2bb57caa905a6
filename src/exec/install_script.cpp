// install.sh, the environment's build script: conda where the image has it; else every problem
// of the conda file said at once, then the pip: section with pip.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "mlw/config/run_config.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// A line of the install script that stops the build with a reason mlw shows as the run's problem.
std::string stop_build(int code, const std::string& message) {
  return "  echo " + shell_quote(fmt::format("mlw-error[{}]: {}", code, message)) + "; exit 1\n";
}

/// install.sh's check that the image's python3 is the one `pin` (python=X.Y) asks for: a
/// problem() when it is not.
std::string python_pin_check(const std::string& pin, const std::string& file,
                             const std::string& image) {
  const bool exact = !pin.empty() && std::all_of(pin.begin(), pin.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
  if (!exact) return "";
  return "have=$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null "
         "|| echo none)\n"
         "case \"$have\" in " +
         shell_quote(pin) + "|" + shell_quote(pin) + ".*) ;;\n*) problem " +
         shell_quote(fmt::format("{} asks for python={} but the base image {} has no conda to "
                                 "install it, and its python3 is ",
                                 file, pin, image)) +
         "\"$have\"" +
         shell_quote(
             "; use a base image with conda or with that python, or change the python "
             "line of " +
             file) +
         " ;;\nesac\n";
}

/// install.sh's check of the wheels the pip: section names by file against the tags the image's
/// python accepts (pip's own packaging.tags): a problem() naming those for another platform or
/// Python (win_amd64, cp35).
std::string wheel_tags_check(const std::string& requirements) {
  std::vector<std::string> wheels;
  for (const auto& line : split(requirements, '\n')) {
    const std::string word(trim(line));
    if (word.ends_with(".whl") && word.find(' ') == std::string::npos) wheels.push_back(word);
  }
  if (wheels.empty()) return "";
  static const char* k_check =
      "import platform, sys\n"
      "try:\n"
      "    from pip._vendor.packaging.tags import sys_tags\n"
      "except Exception:\n"
      "    sys.exit(0)\n"
      "ok = {(t.interpreter, t.abi, t.platform) for t in sys_tags()}\n"
      "bad = []\n"
      "for path in sys.argv[1:]:\n"
      "    name = path.rsplit('/', 1)[-1]\n"
      "    parts = name[:-4].split('-')\n"
      "    if len(parts) < 5:\n"
      "        continue\n"
      "    py, abi, plat = parts[-3:]\n"
      "    if not any((p, a, q) in ok for p in py.split('.') for a in abi.split('.')\n"
      "               for q in plat.split('.')):\n"
      "        bad.append('%s (%s-%s-%s)' % (name, py, abi, plat))\n"
      "if bad:\n"
      "    print('wheels for another platform or Python than the image has (python3 %d.%d on "
      "%s): %s' % (sys.version_info[0], sys.version_info[1], platform.machine(), "
      "', '.join(bad)))\n";
  return "bad=$(python3 -c " + shell_quote(k_check) + " " + shell_join(wheels) +
         " 2>/dev/null || true)\n[ -z \"$bad\" ] || problem \"$bad\"\n";
}

}  // namespace

/// install.sh, run in the image by its Dockerfile: conda where the image has it; else the pip:
/// section with pip, after checking that nothing the file asks for is silently left out (conda
/// packages, a python version the image does not have); for PySpark, that spark-submit exists.
std::string install_script(const RunPlan& plan, const EnvironmentSpec& env) {
  const std::string file = plan.run_config.conda_dependencies_file;
  const std::string image = plan.compute.base_docker_image;
  std::string script = "set -e\ncd /mlw/env/files\n";
  if (plan.run_config.framework == "PySpark") {
    script += "if ! command -v spark-submit >/dev/null 2>&1; then\n" +
              stop_build(exit_code::k_not_found,
                         no_spark_submit_message(plan.record.run_config, "the image " + image)) +
              "fi\n";
  }
  script +=
      "if command -v conda >/dev/null 2>&1; then\n"
      "  conda env update -n base -f /mlw/env/conda_dependencies.yml\n"
      "  exit 0\n"
      "fi\n";
  // Without conda, every problem of the file is found before pip starts and said in one go
  // (conda packages, a python the image does not have, wheels for another platform or Python).
  script += "problems=''\nproblem() { problems=\"${problems:+$problems; also: }$1\"; }\n";
  if (!env.conda_packages.empty()) {
    script += "problem " +
              shell_quote(fmt::format(
                  "the base image {} has no conda, so the conda packages of {} cannot be "
                  "installed: {}; use a base image with conda (e.g. continuumio/miniconda3), or "
                  "list them under pip: in {}",
                  image, file, join(env.conda_packages, ", "), file)) +
              "\n";
  }
  script += python_pin_check(env.python_pin, file, image);
  script += wheel_tags_check(env.requirements);
  script += fmt::format(
      "if [ -n \"$problems\" ]; then\n  printf 'mlw-error[{}]: %s\\n' \"$problems\"; exit 1\nfi\n",
      exit_code::k_cannot_start);
  script += fmt::format(
      "if [ ! -s /mlw/env/requirements.txt ]; then\n"
      "  echo 'mlw: nothing to install'\n"
      "elif python3 -m pip --version >/dev/null 2>&1; then\n"
      "  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir "
      "--disable-pip-version-check -r /mlw/env/requirements.txt\n"
      "else\n{}fi\n",
      stop_build(exit_code::k_cannot_start,
                 fmt::format("the base image {} has neither conda nor pip, so the pip: section of "
                             "{} cannot be installed; use a base image with conda or pip, or "
                             "empty the pip: section",
                             image, file)));
  return script;
}

}  // namespace mlw

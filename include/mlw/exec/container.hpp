#pragma once

#include <map>
#include <string>
#include <vector>

#include "mlw/exec/executor.hpp"
#include "mlw/remote/probe.hpp"

namespace mlw {

/// The run environment of a docker or remotedocker run (spec §5): image `mlw_env:<hash>`, built
/// from the base image and the conda dependencies file.
struct EnvironmentSpec {
  std::string hash;          ///< over base image, dependency bytes, local files, framework
  std::string tag;           ///< mlw_env:<hash>
  std::string conda_file;    ///< the dependency file's text
  std::string requirements;  ///< its `pip:` section, one requirement per line
  std::vector<std::string> conda_packages;  ///< the non-pip dependencies (python= excluded)
  std::string python_pin;                   ///< the version of a `python=3.5.2` line, if any
  std::vector<ManifestEntry> local_files;   ///< project files the pip section names (wheels)
  std::string dockerfile;                   ///< runs install.sh with install_arguments()
  std::string install_script;               ///< src/exec/install.sh
};

/// Reads the dependency file (from the project) and derives the environment; throws mlw::Error
/// with file:line for a malformed file.
EnvironmentSpec environment_spec(const RunPlan& plan);

/// The words after `install.sh` (src/exec/install.sh) in the Dockerfile's RUN for `env`: what it
/// says for each problem the image may have, the pinned python, the wheels to check.
std::vector<std::string> install_arguments(const RunPlan& plan, const EnvironmentSpec& env);

/// The run's share folder, `native` (nativeSharedDirectory, expanded) / project / target: in 2017
/// the share was per project and target. No trailing slash.
std::string share_folder(const std::string& native, const RunPlan& plan);

/// A share folder as AZUREML_NATIVE_SHARE_DIRECTORY and MLW_SHARE_DIR hold it: with the trailing
/// slash of the 2017 value, since 2017 samples write `share_dir + 'model.pkl'`.
std::string share_variable(const std::string& folder);

/// Folders of a run on the target machine.
struct TargetRunPaths {
  std::string run_dir;    ///< holds snapshot/, helper/, driver_log.txt, exit_code …
  std::string share_dir;  ///< nativeSharedDirectory, expanded
  std::string tree;       ///< the run folder's tree (a tar) for the monitor's launch to make; empty
                          ///< when the ship made the folder
};

/// The container's name for a run: "mlw-" and the run id in the characters docker accepts
/// ([a-z0-9_.-]); a run id with others (a project folder named "my project" or "résumé") has
/// them as '-' and a short hash of the id appended, so two such names cannot meet.
std::string container_name(const std::string& run_id);

/// The value of an environment image's `mlw.project` label for a project (its folder's name): the
/// name where it is made of [A-Za-z0-9_.-], else those kept, others '-', and a short hash of it.
std::string project_label(const std::string& project);

/// The read-only bind mounts (`FOLDER:MOUNT:ro`) of the data sets' versions a run mounts.
std::vector<std::string> data_binds(const RunPlan& plan);

/// The `docker run -d …` words of a container run (image and argv last). Values of environment
/// variables are not among them: each is passed as `-e NAME` from the monitor's environment.
std::vector<std::string> docker_run_words(const RunPlan& plan, const TargetRunPaths& paths,
                                          const TargetFacts& facts, const std::string& image,
                                          const std::string& user);

/// The run's command: `python` (spark-submit for PySpark), the script and its arguments. In a
/// container the interpreter is python3; on a machine, the compute file's pythonLocation.
std::vector<std::string> script_command(const RunPlan& plan, const std::string& python = "python3");

/// Whether a word or an environment value can go through Docker as it is (its JSON holds only
/// UTF-8); what cannot is set by utf8_command inside the container instead.
bool passes_docker(const std::string& value);

/// `words` as a command Docker can carry: Docker passes words and environment values as JSON,
/// which holds only UTF-8. When a word or one of the run's environment values (its container
/// paths) is not UTF-8, the command becomes `/bin/sh -c` of src/exec/words.sh with ASCII printf
/// formats that rebuild those bytes: it exports the values and execs the words; otherwise `words`
/// unchanged.
std::vector<std::string> utf8_command(const RunPlan& plan, std::vector<std::string> words);

/// The command of a container run: script_command, after a header that prints the GPUs the
/// container sees when nvidiaDocker is true.
std::vector<std::string> container_command(const RunPlan& plan);

/// The Docker Engine API body (POST /containers/create) of the same container docker_run_words
/// describes with sharedVolumes true: the run folder and the share bind-mounted, `user`
/// ("uid:gid") with HOME=/tmp, --init, the labels, GPUs as a device request.
std::string engine_create_body(const RunPlan& plan, const TargetRunPaths& paths,
                               const TargetFacts& facts, const std::string& image,
                               const std::string& user);

/// The variables a run sees (spec §5), with the paths they have inside the container, on the
/// target machine or here: the one place they are written, for every kind. `helper_dir` holds
/// the helper (default: the run folder's helper/); `base` is the environment they go over (a
/// local run's own; none on a target), its PYTHONPATH kept after the helper.
std::map<std::string, std::string> run_environment(
    const RunPlan& plan, const std::string& run_dir, const std::string& share_dir,
    const std::string& helper_dir = "", const std::map<std::string, std::string>& base = {});

/// Whether the Docker engine's API can run the container, where mlw speaks to the engine: the
/// default container (shared volumes, no extra docker run arguments, no sudo, no nvidia-docker
/// wrapper); else the docker command runs it.
bool runs_in_engine(const ComputeConfig& compute, const TargetFacts& facts);

/// The monitor: a POSIX sh script started detached on the target that runs the container (or,
/// for `remote`, the script), writes driver_log.txt, then exit_code (and `oom`), and survives a
/// dropped SSH connection.
std::string monitor_script(const RunPlan& plan, const TargetRunPaths& paths,
                           const TargetFacts& facts, const std::string& image);

}  // namespace mlw

#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlw/config/compute_file.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/util/error.hpp"

// The kinds of compute target (docs/architecture.md, "Adding a target kind"): each is one file in
// src/kinds/ that defines one TargetKind, and one row of the table in src/kinds/table.cpp. Every
// place that differs by kind asks the table: the .compute keys that apply, attach's subcommands
// and options, the probe, the checks of submit and doctor, and the executor.

namespace mlw {

struct TargetFacts;
class Executor;
class Place;
class RunDriver;

/// How one check came out: doctor's RESULT column ("ok", "fail", "-").
enum class CheckResult { Ok, Fail, NotNeeded };

/// One check of a target, written once: `doctor` prints every row; submit and attach stop at the
/// first row with a refusal.
struct CheckRow {
  std::string name{};                    ///< doctor's CHECK column
  CheckResult result = CheckResult::Ok;  ///< doctor's RESULT column
  std::string detail{};                  ///< what was found
  std::string fix{};                     ///< what to do when it failed
  /// What submit says when this row stops a run (empty: it does not). Set where the row fails,
  /// except for rows that only inform (GPU list, disk) or where a batch system would queue the run.
  std::string refusal{};
  int exit_code = exit_code::k_cannot_start;  ///< submit's exit code for that refusal
  /// What attach warns of when this row fails without a refusal (the target is written).
  std::string warning{};
};

/// What a kind's checks look at.
struct CheckInput {
  const ComputeConfig& compute;
  const TargetFacts& facts;
  std::string host;         ///< the target's machine as messages name it
  std::string target_name;  ///< the target's name (aml_config/<name>.compute)
};

/// Which option groups `computetarget attach <kind>` offers.
struct AttachOptionSet {
  bool remote = false;  ///< address, login, password, keys
  bool docker = false;  ///< base image, GPUs
  bool python = false;  ///< --python
};

/// How a kind runs its runs (the Runner of docs/architecture.md): its traits and its driver.
struct Runner {
  bool image = false;  ///< runs in an environment image built from baseDockerImage
  /// Its runs go on without their supervisor (on the target, in an engine, in a batch system): a
  /// Lost one can be followed again (history logs -f starts a new supervisor).
  bool detached = false;
  /// A batch system queues its runs (sbatch, qsub): the run folder is shipped ahead of the
  /// job, not made by a monitor's launch.
  bool batch = false;
  /// A sweep's points go to it as one job array (RunPlan::array; docs/sweeps.md).
  bool arrays = false;
  /// How a supervisor runs it on the target (the local Docker engine's API aside).
  std::unique_ptr<RunDriver> (*make_driver)() = nullptr;
};

/// One kind of compute target: a Place times a Runner, and everything else that differs by
/// kind, in one row.
struct TargetKind {
  std::string_view name{};                  ///< the `type` in .compute files
  std::vector<std::string_view> aliases{};  ///< other names `type` accepts (2017's localdocker)
  const Place* place = nullptr;             ///< where its runs happen
  Runner runner{};                          ///< how they run there
  /// The .compute keys of this kind besides those every kind has (type, nativeSharedDirectory).
  std::vector<std::string_view> keys{};
  /// The keys this kind owns (its section of the .compute file, with their attach options).
  std::vector<OwnKey> own_keys{};
  /// The own key that `submit --gpus N` sets, for a kind whose scheduler gives GPUs (slurm's
  /// gpusPerNode); kinds with gpusPerRun lease them instead; "": --gpus is refused.
  std::string_view gpu_key{};
  AttachOptionSet attach{};                    ///< attach's option groups
  std::vector<std::string> attach_examples{};  ///< the footer of `attach <kind> --help`
  std::string (*probe_section)(const ComputeConfig&) = nullptr;  ///< its lines of the probe
  /// A problem between its own keys that attach refuses as a usage error, or "".
  std::string (*check_keys)(const ComputeConfig&) = nullptr;
  /// Adds its settings to what attach prints (the files, address and login are there already).
  void (*describe)(const ComputeConfig&, nlohmann::ordered_json&) = nullptr;
  /// Its checks, in doctor's order, from the probe's facts.
  void (*checks)(const CheckInput&, std::vector<CheckRow>&) = nullptr;
  /// Runs, cancels and follows its runs; nullptr: the executor of its Place and Runner.
  std::unique_ptr<Executor> (*make_executor)() = nullptr;

  /// Whether `key` is a .compute key of this kind (a shared one it uses, or its own).
  bool has_key(std::string_view key) const;
};

/// What the probe asks for a target of `compute`'s kind: the engine where it uses an image,
/// pythonLocation where it has that key, and its own section.
ProbeAsk probe_ask(const ComputeConfig& compute);

/// Every kind, in the order help and messages list them.
const std::vector<const TargetKind*>& target_kinds();

/// The kind named `type` (or one of its aliases); nullptr when there is none.
const TargetKind* find_kind(std::string_view type);

/// The kind named `type`; throws mlw::Error naming the known kinds otherwise.
const TargetKind& kind_of(std::string_view type);

/// The canonical kind names, in the table's order.
std::vector<std::string> kind_name_list();

/// The canonical kind names, joined with `separator` ("local, docker, …").
std::string kind_names(std::string_view separator = ", ");

/// Throws mlw::Error (the row's refusal and exit code) for the first row that refuses.
void refuse_first(const std::vector<CheckRow>& rows);

// The rows that several kinds share (src/kinds/checks.cpp).

/// The docker row (and the NVIDIA runtime row) of the docker and remotedocker kinds.
void docker_rows(const CheckInput& in, std::vector<CheckRow>& rows);
/// The checks of the kinds that run in a container (docker, remotedocker): docker, NVIDIA
/// runtime, GPUs, free disk.
void container_checks(const CheckInput& in, std::vector<CheckRow>& rows);
/// The python row of the local and remote kinds; `refuses`: submit stops on it.
void python_row(const CheckInput& in, std::vector<CheckRow>& rows, bool refuses);
/// One row per GPU the probe found; with `say_none`, a row when there are none (a failure when
/// nvidiaDocker asks for them).
void gpu_rows(const CheckInput& in, std::vector<CheckRow>& rows, bool say_none);
/// The `GPU sampling` row: whether and where the target's runs are sampled (docs/gpus.md), never
/// an error.
void sampling_row(const CheckInput& in, std::vector<CheckRow>& rows);
/// The free disk row.
void disk_row(const CheckInput& in, std::vector<CheckRow>& rows);
/// The boot hook row of restartAfterReboot (remote, remotedocker): where the probe asked.
void reboot_row(const CheckInput& in, std::vector<CheckRow>& rows);

/// The NVIDIA row's refusal: nvidiaDocker is true but the engine has no NVIDIA runtime.
std::string nvidia_refusal(const ComputeConfig& compute, const TargetFacts& facts,
                           const std::string& host);

}  // namespace mlw

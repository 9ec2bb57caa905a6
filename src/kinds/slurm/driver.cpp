// The Slurm driver: sbatch on the login node, a monitor there that watches the job, its log
// followed as the monitor driver follows one, the end from Slurm's state and ExitCode.

#include <fmt/format.h>

#include <map>

#include "mlw/exec/container.hpp"
#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/monitor_driver.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/strings.hpp"
#include "slurm.hpp"

namespace mlw {

namespace {

/// How long the Slurm controller may not answer before a run shows Lost (MLW_SLURM_RETRY, s).
int slurm_retry_seconds() {
  return setting("MLW_SLURM_RETRY");
}

class SlurmDriver : public MonitorDriver {
 public:
  /// sbatch, the job id recorded (Queued), a monitor that watches the job, Running once Slurm
  /// runs it. False when sbatch refused the job (recorded as failed).
  bool start(RunSession& session, const std::string&) override {
    std::vector<std::string> arguments = {std::to_string(slurm_retry_seconds())};
    std::vector<std::string> options = sbatch_options(session.plan);
    std::string_view submit = embedded_script("src/kinds/slurm/submit.sh");
    std::string array_submit;
    if (const auto& array = session.plan.array) {
      // One element of a sweep's job array: the array is named and logs in its own folder
      // (array.sh appends each element's output to its run's driver_log.txt).
      std::erase_if(options, [](const std::string& option) {
        return option.starts_with("--job-name=") || option.starts_with("--output=") ||
               option.starts_with("--open-mode=");
      });
      options.insert(options.begin(), "--job-name=" + container_name(array->id));
      const std::string& run_dir = session.paths.run_dir;
      const std::string base = run_dir.substr(0, run_dir.rfind("/runs/"));
      arguments.insert(
          arguments.end(),
          {base + "/arrays/" + array->id, std::to_string(array->index), std::to_string(array->size),
           std::to_string(array->limit), std::to_string(setting("MLW_ARRAY_WAIT"))});
      array_submit = std::string(embedded_script("src/exec/array_join.sh")) +
                     std::string(embedded_script("src/kinds/slurm/submit_array.sh"));
      submit = array_submit;
    }
    arguments.insert(arguments.end(), options.begin(), options.end());
    return start_batch_job(
        session,
        {submit, arguments,
         stdin_file(embedded_script("src/kinds/slurm/job.sh")) +
             stdin_file(slurm_run_env(session.plan, session.paths)) +
             stdin_file(embedded_script("src/exec/sampler.sh")) +
             stdin_file(embedded_script("src/exec/sampler.awk")) + stdin_file(nvml_reader_packed()),
         "sbatch", "Slurm", std::string(embedded_script("src/kinds/slurm/monitor.sh"))});
  }

  /// A monitor that gave up on an unanswering controller is started again; it picks the job up
  /// where Slurm has it. The run folder's own monitor.sh: a run an older mlw started keeps the
  /// monitor it was started with.
  bool resume(RunSession& session) override {
    return resume_batch_job(session, "slurm_state batch_state", [&session] {
      return session
          .run_reconnecting(script_call("src/exec/steps.sh",
                                        {"mlw_print", session.paths.run_dir + "/monitor.sh"}))
          .output;
    });
  }

  void stop(RunSession& session) override {
    session.run_reconnecting(
        script_call("src/kinds/slurm/stop.sh", {"mlw_stop", session.record.job_id}));
  }

  /// The job's final state, its ExitCode, the script's own exit code and every rank's.
  RunEnding ending(RunSession& session) override {
    std::map<std::string, std::string> values;
    for (const auto& line : split(m_seen == Seen::Ended ? m_end : "", '\n')) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) values[line.substr(0, eq)] = trim(line.substr(eq + 1));
    }
    RunEnding ending;
    // Requeued: its attempts are one run (job.sh counts them), whatever the end.
    if (const auto count = parse_integer(values["restarts"], 0, 1000)) {
      session.record.restarts = static_cast<int>(*count);
    }
    std::optional<int> script_code;
    if (const auto code = parse_integer(values["job_code"], 0, 255)) {
      script_code = static_cast<int>(*code);
    } else if (!values["job_code"].empty()) {
      ending.problems.push_back(
          fmt::format("{} answered \"{}\" where the job's exit code (0-255) was expected",
                      session.host(), printable(values["job_code"])));
    }
    // Every rank's own exit code (none where Slurm stopped the rank after another failed).
    const int nodes = slurm_config(session.plan.compute).nodes;
    for (int rank = 0; rank < nodes && rank < 4096; ++rank) {
      const auto code = parse_integer(values["rank_" + std::to_string(rank)], 0, 255);
      ending.node_exit_codes.push_back(code ? std::optional<int>(static_cast<int>(*code))
                                            : std::nullopt);
    }
    const SlurmEnd end = slurm_end(values["slurm_state"], values["slurm_exit"], script_code);
    ending.status = end.status;
    apply_gpu_words(split(m_seen == Seen::Ended ? m_end : "", '\n'), ending);
    if (end.status == status::k_lost) {
      ending.lost_reason = lost_reason::k_slurm;
      ending.lost_problem = end.problem;
      return ending;
    }
    ending.exit_code = end.exit_code;
    ending.oom = values["slurm_state"] == "OUT_OF_MEMORY";
    if (!end.problem.empty()) ending.problems.push_back(end.problem);
    return ending;
  }

 protected:
  std::string end_script() const override {
    return std::string(embedded_script("src/kinds/slurm/end.sh"));
  }
};

}  // namespace

std::unique_ptr<RunDriver> slurm_driver() {
  return std::make_unique<SlurmDriver>();
}

}  // namespace mlw

// The sge kind's driver: submit.sh runs qsub on the host, monitor.sh watches the job there, the
// log is followed as any monitor's is, and the end comes from the job's own exit code or qacct.

#include <fmt/format.h>

#include <algorithm>

#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/monitor_driver.hpp"
#include "mlw/exec/requeue.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "sge.hpp"

namespace mlw::sge {

namespace {

class Driver : public MonitorDriver {
 public:
  /// submit.sh (qsub): the job id recorded (Queued), the monitor started, Running once Grid
  /// Engine runs the job. False when qsub refused it (recorded as failed).
  bool start(RunSession& session, const std::string&) override {
    const Config config = config_of(session.plan.compute);
    const auto& array = session.plan.array;
    std::vector<std::string> words = {
        container_name(array ? array->id : session.plan.record.run_id),
        config.queue,
        config.pe,
        std::to_string(config.slots),
        std::to_string(setting("MLW_BATCH_RETRY")),
        std::to_string(config.gpus),
        config.rerun ? "y" : "n",
        limits(config)};
    if (array) {  // one task of a sweep's job array (qsub -t 1-N -tc K)
      const std::string& run_dir = session.paths.run_dir;
      words.insert(words.end(),
                   {run_dir.substr(0, run_dir.rfind("/runs/")) + "/arrays/" + array->id,
                    std::to_string(array->index), std::to_string(array->size),
                    std::to_string(array->limit), std::to_string(setting("MLW_ARRAY_WAIT"))});
    }
    // The array's join precedes the submit script (it is used only with an array's words).
    const std::string submit = std::string(embedded_script("src/exec/array_join.sh")) +
                               std::string(embedded_script("src/kinds/sge/submit.sh"));
    return start_batch_job(
        session,
        {submit, words,
         stdin_file(embedded_script("src/kinds/sge/job.sh")) +
             stdin_file(embedded_script("src/kinds/sge/end.sh")) +
             stdin_file(run_env(session.plan, session.paths)) +
             stdin_file(embedded_script("src/exec/sampler.sh")) +
             stdin_file(embedded_script("src/exec/sampler.awk")) + stdin_file(nvml_reader_packed()),
         "qsub", "Grid Engine", std::string(embedded_script("src/kinds/sge/monitor.sh"))});
  }

  /// A monitor that gave up on a qmaster that did not answer is started again.
  bool resume(RunSession& session) override {
    return resume_batch_job(session, "batch_state", [] {
      return std::string(embedded_script("src/kinds/sge/monitor.sh"));
    });
  }

  /// qdel (stop.sh): job.sh records 143.
  void stop(RunSession& session) override {
    session.run_reconnecting(
        script_call("src/kinds/sge/stop.sh", {"mlw_stop", session.record.job_id}));
  }

  RunEnding ending(RunSession& session) override {
    std::vector<std::string> problems;
    const End end = parse_end(m_seen == Seen::Ended ? m_end : "", session.host(), problems);
    session.record.restarts = end.restarts;  // rescheduled (requeue): its runs are one run
    RunEnding ending = ending_of(end, session.record.cancel_requested || session.canceled(),
                                 config_of(session.plan.compute).time_limit_s,
                                 session.record.job_id, session.host());
    ending.problems.insert(ending.problems.begin(), problems.begin(), problems.end());
    apply_gpu_words(split(m_seen == Seen::Ended ? m_end : "", '\n'), ending);
    return ending;
  }

 protected:
  std::string end_script() const override { return "sh ./end.sh"; }
};

}  // namespace

std::string run_env(const RunPlan& plan, const TargetRunPaths& paths) {
  std::string text = "# The variables and the command of run " + plan.record.run_id +
                     ", written by mlw; job.sh sources it.\n";
  auto env = run_environment(plan, paths.run_dir, paths.share_dir);
  // Rerunnable: the warning's name and a folder for checkpoints that every run of the job sees.
  for (auto& [key, value] :
       requeue_environment(requeue_config(plan.compute), paths.share_dir, plan.record.run_id)) {
    env[key] = value;
  }
  for (const auto& [key, value] : env) text += "export " + shell_quote(key + "=" + value) + "\n";
  text += fmt::format("mlw_sample_every={}\nmlw_sample_warn={}\n", plan.compute.gpu_sample_seconds,
                      shell_quote(plan.compute.gpu_unused_warn_minutes));
  text += "set -- " + shell_join(script_command(plan, plan.compute.python_location)) + "\n";
  return text;
}

End parse_end(const std::string& text, const std::string& host,
              std::vector<std::string>& problems) {
  End end;
  for (const auto& line : split(text, '\n')) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = trim(line.substr(eq + 1));
    if (key == "job_code" && !value.empty()) {
      if (const auto code = parse_integer(value, 0, 255)) {
        end.script_code = static_cast<int>(*code);
      } else {
        problems.push_back(
            fmt::format("{} answered \"{}\" where the job's exit code (0-255) was expected", host,
                        printable(value)));
      }
    } else if (key == "batch_state") {
      end.state = value;
    } else if (key == "sge_acct" && !value.empty()) {
      const auto words = split(value, ' ');
      if (const auto code = parse_integer(words[0], 0, 255)) {
        end.exit_status = static_cast<int>(*code);
      }
      if (words.size() > 1) end.failed = words[1];
    } else if (key == "sge_error") {
      end.error = printable(value.substr(0, 1000));
    } else if (key == "stopped_after") {
      if (const auto seconds = parse_integer(value, 0, 1LL << 40)) {
        end.stopped_after = static_cast<int>(std::min<long long>(*seconds, 1 << 30));
      }
    } else if (key == "restarts") {
      end.restarts = static_cast<int>(parse_integer(value, 0, 1000).value_or(0));
    }
  }
  return end;
}

namespace {

/// Why Grid Engine stopped a job that mlw did not cancel: its time limit when the stop came
/// within the queue's notify time (at most 60 s by default) of it, else someone's qdel or a limit.
std::string stopped_by_engine(const End& end, int time_limit_s, const std::string& job_id) {
  if (time_limit_s > 0 && end.stopped_after && *end.stopped_after + 90 >= time_limit_s) {
    return fmt::format(
        "Grid Engine stopped job {} at its time limit ({} s, h_rt; timeLimit in the compute file) "
        "after {} s",
        job_id, time_limit_s, *end.stopped_after);
  }
  return fmt::format(
      "Grid Engine stopped job {} after {} s (SIGUSR2, then SIGKILL): mlw did not ask; a qdel by "
      "another or a limit of the queue did",
      job_id, end.stopped_after.value_or(0));
}

}  // namespace

RunEnding ending_of(const End& end, bool cancel_requested, int time_limit_s,
                    const std::string& job_id, const std::string& host) {
  RunEnding ending;
  if (end.state == "LOST") {
    ending.status = status::k_lost;
    ending.lost_reason = k_lost_qmaster;
    ending.lost_problem = fmt::format(
        "the Grid Engine qmaster on {} did not answer for {} s (MLW_BATCH_RETRY); job {} may go "
        "on: follow it again with mlw history logs -f",
        host, setting("MLW_BATCH_RETRY"), job_id);
    return ending;
  }
  if (cancel_requested) {
    ending.status = status::k_canceled;
    ending.exit_code = end.script_code.value_or(143);
    if (!end.script_code) ending.problems.push_back("Grid Engine deleted the job (qdel)");
    return ending;
  }
  if (end.script_code) {
    ending.status = *end.script_code == 0 ? status::k_completed : status::k_failed;
    ending.exit_code = *end.script_code;
    if (end.stopped_after && *end.script_code != 0) {
      ending.problems.push_back(stopped_by_engine(end, time_limit_s, job_id));
    }
    return ending;
  }
  ending.status = status::k_failed;
  if (!end.error.empty()) {
    ending.exit_code = exit_code::k_cannot_start;
    ending.problems.push_back(
        fmt::format("Grid Engine could not run job {} on {}: {}", job_id, host, end.error));
  } else if (end.exit_status) {
    ending.exit_code = *end.exit_status;
    ending.problems.push_back(
        fmt::format("Grid Engine ended job {} before the script (qacct: exit_status {}, failed {})",
                    job_id, *end.exit_status, end.failed.empty() ? "?" : end.failed));
  } else {
    ending.exit_code = exit_code::k_cannot_start;
    ending.problems.push_back(fmt::format(
        "Grid Engine on {} has no record of how job {} ended (qacct -j {})", host, job_id, job_id));
  }
  return ending;
}

std::unique_ptr<RunDriver> driver() {
  return std::make_unique<Driver>();
}

}  // namespace mlw::sge

// The sge kind's row: its keys, attach options, probe lines and checks.

#include "sge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "mlw/exec/place.hpp"
#include "mlw/exec/requeue.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::sge {

namespace {

/// Grid Engine's names: no white space, no '/', ':', '@', '\\', '*', '?' (qconf refuses them).
std::string name_problem(const std::string& value) {
  if (value.empty()) return "";
  if (value.find_first_of(" \t\n\r/:@\\*?'\"$`") != std::string::npos) {
    return fmt::format("\"{}\" is not a Grid Engine name (letters, digits, . _ -)",
                       printable(value));
  }
  return "";
}

std::string slots_problem(const std::string& value) {
  const auto slots = parse_integer(value, 1, 1 << 20);
  return slots ? "" : "must be at least 1";
}

std::string gpus_problem(const std::string& value) {
  return parse_integer(value, 0, 1024) ? "" : "must be 0 (none) or a count of GPUs";
}

/// Grid Engine's warning is its own SIGUSR1 (qsub -notify, the soft limit s_rt), sent to every
/// process of the job: no other signal can be asked for.
std::string signal_problem(const std::string& value) {
  if (value == "USR1") return "";
  return fmt::format(
      "must be USR1 on Grid Engine, not \"{}\": its warning (qsub -notify, the soft time limit "
      "s_rt) is SIGUSR1, sent to every process of the job",
      printable(value));
}

/// HH:MM:SS, as h_rt takes it (hours may be more than 24).
std::optional<int> seconds_of(const std::string& value) {
  const auto parts = split(value, ':');
  if (parts.size() != 3 || parts[1].size() != 2 || parts[2].size() != 2) return std::nullopt;
  const auto h = parse_integer(parts[0], 0, 100000);
  const auto m = parse_integer(parts[1], 0, 59);
  const auto s = parse_integer(parts[2], 0, 59);
  if (!h || !m || !s || *h * 3600 + *m * 60 + *s == 0) return std::nullopt;
  return static_cast<int>(*h * 3600 + *m * 60 + *s);
}

std::string time_problem(const std::string& value) {
  if (value.empty() || seconds_of(value)) return "";
  return fmt::format("must be HH:MM:SS (qsub -l h_rt), not \"{}\"", printable(value));
}

int number(const std::string& text) {
  return static_cast<int>(parse_integer(text, 0, 1 << 30).value_or(0));
}

/// The commands and the qmaster; false when nothing more can be checked.
bool scheduler_rows(const CheckInput& in, const Facts& sge, std::vector<CheckRow>& rows) {
  const bool have = sge.missing.empty();
  rows.push_back(
      {"Grid Engine commands", have ? CheckResult::Ok : CheckResult::Fail,
       have ? "qsub, qstat, qdel, qacct, qconf" : "missing: " + join(sge.missing, ", "),
       "use a Grid Engine submit host, or put its bin folder on the PATH of SSH sessions there",
       have ? ""
            : fmt::format("{} has no {} on the PATH of an SSH session: is it a Grid Engine "
                          "submit host? (source $SGE_ROOT/$SGE_CELL/common/settings.sh in "
                          "~/.bashrc there)",
                          in.host, join(sge.missing, ", "))});
  if (!have) return false;
  if (!sge.error.empty()) {
    rows.push_back({"qmaster", CheckResult::Fail, sge.error,
                    "start sge_qmaster, or check SGE_ROOT, SGE_CELL and SGE_QMASTER_PORT there",
                    fmt::format("the Grid Engine qmaster does not answer on {}: {} (is "
                                "sge_qmaster up? try: ssh {} qstat)",
                                in.host, sge.error, in.host)});
    return false;
  }
  rows.push_back({"qmaster", CheckResult::Ok,
                  fmt::format("answers ({} {})", sge.queues.size(),
                              sge.queues.size() == 1 ? "queue" : "queues"),
                  ""});
  return true;
}

/// The queue (the compute file's, or any), the parallel environment and the slots asked.
void queue_rows(const CheckInput& in, const Facts& sge, std::vector<CheckRow>& rows) {
  const Config config = config_of(in.compute);
  std::vector<std::string> names;
  int total = 0;
  int available = 0;
  for (const auto& queue : sge.queues) {
    names.push_back(queue.name);
    if (config.queue.empty() || queue.name == config.queue) {
      total = std::max(total, queue.total);
      available += queue.available;
    }
  }
  const bool found = config.queue.empty()
                         ? !sge.queues.empty()
                         : std::find(names.begin(), names.end(), config.queue) != names.end();
  const std::string queue = config.queue.empty() ? "any queue" : config.queue;
  rows.push_back({"queue", found ? CheckResult::Ok : CheckResult::Fail,
                  found ? fmt::format("{} ({} slots, {} free)", queue, total, available)
                        : fmt::format("no queue {} (there are: {})", queue,
                                      names.empty() ? "none" : join(names, ", ")),
                  "set queue in the compute file to one that qconf -sql lists",
                  found ? ""
                        : fmt::format("Grid Engine on {} has no queue \"{}\" (list them with: "
                                      "qconf -sql)",
                                      in.host, config.queue.empty() ? "" : config.queue)});
  if (!found) return;
  if (!config.pe.empty()) {
    const bool pe = std::find(sge.pes.begin(), sge.pes.end(), config.pe) != sge.pes.end();
    rows.push_back({"parallel environment", pe ? CheckResult::Ok : CheckResult::Fail,
                    pe ? config.pe : "no parallel environment " + config.pe,
                    "set pe in the compute file to one that qconf -spl lists",
                    pe ? ""
                       : fmt::format("Grid Engine on {} has no parallel environment \"{}\" (list "
                                     "them with: qconf -spl)",
                                     in.host, config.pe)});
  }
  if (config.slots > 1 && config.pe.empty()) {
    rows.push_back(
        {"slots", CheckResult::Fail,
         fmt::format("a run asks for {} slots without a parallel environment", config.slots),
         "set pe in the compute file (qconf -spl lists them), or slots: 1",
         fmt::format("slots: {} needs a parallel environment: set pe in the compute "
                     "file (list them with: ssh {} qconf -spl)",
                     config.slots, in.host)});
    return;
  }
  const bool fits = config.slots <= total;
  rows.push_back({"slots", fits ? CheckResult::Ok : CheckResult::Fail,
                  fmt::format("a run asks for {}; {} has {}", config.slots, queue, total),
                  "lower slots in the compute file",
                  fits ? ""
                       : fmt::format("the run asks for {} slots but {} on {} has {}; lower slots "
                                     "in the compute file",
                                     config.slots, queue, in.host, total)});
}

}  // namespace

Config config_of(const ComputeConfig& compute) {
  Config config;
  config.queue = own_value(compute, "queue");
  config.pe = own_value(compute, "pe");
  config.slots = std::max(1, number(own_value(compute, "slots")));
  config.gpus = std::max(0, number(own_value(compute, "gpusPerJob")));
  config.rerun = own_value(compute, "requeue") == "true";
  config.time_limit_s = seconds_of(own_value(compute, "timeLimit")).value_or(0);
  config.lead_s = requeue_config(compute).lead_s;
  return config;
}

std::string limits(const Config& config) {
  if (config.time_limit_s == 0) return "";
  std::string text = fmt::format("h_rt={}", config.time_limit_s);
  if (config.rerun && config.lead_s < config.time_limit_s) {
    text += fmt::format(",s_rt={}", config.time_limit_s - config.lead_s);
  }
  return text;
}

Facts facts_of(const TargetFacts& facts) {
  Facts sge;
  for (const auto& [key, value] : facts.section) {
    if (key == "sge_missing") {
      sge.missing.push_back(value);
    } else if (key == "sge_error") {
      sge.error = value;
    } else if (key == "sge_queue") {
      const auto words = split(value, ' ');
      if (words.size() == 3) sge.queues.push_back({words[0], number(words[1]), number(words[2])});
    } else if (key == "sge_pe") {
      sge.pes.push_back(trim(value));
    }
  }
  return sge;
}

std::string probe_section(const ComputeConfig& compute) {
  const Config config = config_of(compute);
  return "(\nset -- " + shell_quote(config.queue) + " " + shell_quote(config.pe) + "\n" +
         std::string(embedded_script("src/kinds/sge/probe.sh")) + ")\n";
}

void checks(const CheckInput& in, std::vector<CheckRow>& rows) {
  const Facts sge = facts_of(in.facts);
  if (scheduler_rows(in, sge, rows)) queue_rows(in, sge, rows);
  // A warning that would come before the job starts is no warning: refused, not dropped.
  const Config config = config_of(in.compute);
  if (config.rerun && config.time_limit_s > 0 && config.lead_s >= config.time_limit_s) {
    rows.push_back({"checkpoint warning", CheckResult::Fail,
                    fmt::format("checkpointLeadSeconds {} is not less than timeLimit ({} s)",
                                config.lead_s, config.time_limit_s),
                    "lower checkpointLeadSeconds or raise timeLimit",
                    fmt::format("checkpointLeadSeconds ({}) must be less than timeLimit ({} s) in "
                                "aml_config/{}.compute: the warning would come before the job "
                                "starts",
                                config.lead_s, config.time_limit_s, in.target_name)});
  }
  python_row(in, rows, true);
  sampling_row(in, rows);
  disk_row(in, rows);
}

}  // namespace mlw::sge

namespace mlw {

/// The sge kind's row.
const TargetKind& sge_kind() {
  static const TargetKind kind{
      .name = "sge",
      .place = &ssh_host(),
      .runner = {.detached = true, .batch = true, .arrays = true, .make_driver = sge::driver},
      .keys = {"address", "username", "password", "privateKeyFile", "privateKeyPassphrase",
               "pythonLocation", "gpuSampleSeconds", "gpuUnusedWarnMinutes"},
      .own_keys = {{"queue", ValueKind::String, "Grid Engine: the queue (qsub -q); empty: any.", "",
                    sge::name_problem, "--queue", "Grid Engine queue (default: any)"},
                   {"pe", ValueKind::String,
                    "Grid Engine: the parallel environment (qsub -pe); empty: none.", "",
                    sge::name_problem, "--pe", "Parallel environment for more than one slot"},
                   {"slots", ValueKind::Int, "Grid Engine: the slots asked of pe.", "1",
                    sge::slots_problem, "--slots", "Slots per run, with --pe (default 1)"},
                   {"gpusPerJob", ValueKind::Int,
                    "Grid Engine: GPUs per job, asked as -l gpu=N (a consumable complex named "
                    "gpu); 0: none.",
                    "0", sge::gpus_problem, "--gpus-per-job", "GPUs per job (-l gpu=N)"},
                   {"timeLimit", ValueKind::String,
                    "Grid Engine: the job's time limit, HH:MM:SS (qsub -l h_rt).", "",
                    sge::time_problem, "--time", "Time limit, HH:MM:SS (-l h_rt)"},
                   {"requeue", ValueKind::Bool,
                    "Grid Engine: submit the job rerunnable (qsub -r y): rescheduled (qmod -rj, a "
                    "host that failed) or warned (SIGUSR1) and ended other than 0, it runs again "
                    "in the same run folder, one record.",
                    "false", nullptr, "", ""},
                   {"checkpointSignal", ValueKind::String,
                    "Grid Engine: the checkpoint signal, USR1 (its own warning).", "USR1",
                    sge::signal_problem, "", ""},
                   requeue_key("checkpointLeadSeconds")},
      .gpu_key = "gpusPerJob",
      .attach = {.remote = true, .python = true},
      .attach_examples = {"mlw computetarget attach sge -n grid -a head.example.com -u me -k "
                          "--queue all.q --pe smp --slots 4"},
      .probe_section = sge::probe_section,
      .checks = sge::checks,
  };
  return kind;
}

}  // namespace mlw

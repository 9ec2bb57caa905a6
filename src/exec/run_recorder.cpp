#include "mlw/exec/run_recorder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "mlw/history/collect.hpp"
#include "mlw/history/params.hpp"
#include "mlw/history/system_use.hpp"
#include "mlw/sweep/sweep.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace fs = std::filesystem;

RunEnding local_ending(int code, bool cancel_requested) {
  RunEnding ending;
  ending.exit_code = code;
  ending.status = code == 0          ? status::k_completed
                  : cancel_requested ? status::k_canceled
                                     : status::k_failed;
  return ending;
}

RunRecorder::RunRecorder(Context& context, const RunPlan& plan)
    : ctx(context),
      record(plan.record),
      m_run_dir(plan.run_dir),
      m_history_dir(plan.history_dir),
      m_ends_with_pid(plan.ends_with_pid) {}

bool RunRecorder::canceled() const {
  if (fs::exists(m_run_dir / "cancel_requested")) return true;
  // The supervisor's parent is that process while it lives; once it is gone, another.
  const pid_t owner = m_ends_with_pid;
  if (owner <= 0 || ::getpid() == owner || ::getppid() == owner) return false;
  try {
    atomic_write_file(m_run_dir / "cancel_requested",
                      fmt::format("the process it was started for (mlw, pid {}) ended without "
                                  "stopping it: nothing is left to use the run\n",
                                  owner));
  } catch (const Error&) {
  }
  return true;
}

void RunRecorder::save(bool final_save) {
  if (!m_store) m_store.emplace(m_history_dir);
  try {
    m_store->save(record, final_save);
  } catch (const Error& e) {
    std::fprintf(stderr, "mlw supervisor: %s\n", e.what());  // the index has the rest
  }
}

void RunRecorder::claim() {
  record.pid = ::getpid();
  record.pid_start = process_start_time(::getpid()).value_or(0);
  record.boot_id = boot_id();
}

void RunRecorder::mark_running() {
  record.status = status::k_running;
  record.start_ms = ctx.clock->now_ms();
  claim();
  save(false);
}

void RunRecorder::cancel_before_start() {
  record.cancel_requested = true;
  record.status = status::k_canceled;
  apply_early_stop();
  end();
}

void RunRecorder::fail(int code, const std::string& problem) {
  record.exit_code.reset();  // the failure's code, not one seen before it
  record.mark_failed(code, problem, ctx.clock->now_ms(), canceled());
  apply_early_stop();
  save(true);
}

void RunRecorder::apply(const RunEnding& ending) {
  for (const auto& problem : ending.problems) record.problems.push_back(problem);
  record.node_exit_codes.insert(record.node_exit_codes.end(), ending.node_exit_codes.begin(),
                                ending.node_exit_codes.end());
  if (ending.status == status::k_lost) {
    record.mark_lost(ending.lost_reason, ending.lost_problem);
    return;
  }
  record.status = ending.status;
  if (ending.exit_code) record.exit_code = ending.exit_code;
  apply_early_stop();
}

void RunRecorder::collect_results(bool outputs) {
  if (outputs) {
    record.outputs =
        collect_outputs(m_run_dir / "snapshot" / "outputs", m_run_dir / "outputs", record.problems);
  }
  record.metrics = last_metric_values(m_run_dir / "metrics.jsonl", &record.problems);
  // The GPU sampler's series summed up (docs/gpus.md), its run-wide figures as metrics.
  const SystemUse use = read_system_use(m_run_dir / "metrics.jsonl");
  record.system = use.to_json();
  const nlohmann::ordered_json summary = system_summary_metrics(use);
  for (auto it = summary.begin(); it != summary.end(); ++it) record.metrics[it.key()] = it.value();
  const nlohmann::ordered_json logged = logged_params(m_run_dir / "metrics.jsonl");
  for (auto it = logged.begin(); it != logged.end(); ++it) record.params[it.key()] = it.value();
  if (!record.sweep_id.empty()) take_proposal();
}

void RunRecorder::take_proposal() {
  for (const auto& decision : read_decisions(m_run_dir / "metrics.jsonl")) {
    if (decision.verdict != k_proposal_verdict || !decision.proposal.is_object()) continue;
    const std::vector<std::string> words = point_arguments(decision.proposal);
    const auto has = [&words](const std::vector<std::string>& all) {
      return all.size() >= words.size() &&
             std::equal(words.begin(), words.end(), all.end() - static_cast<long>(words.size()));
    };
    if (!has(record.arguments))
      record.arguments.insert(record.arguments.end(), words.begin(), words.end());
    if (!has(record.command))
      record.command.insert(record.command.end(), words.begin(), words.end());
    return;
  }
}

void RunRecorder::apply_early_stop() {
  if (!record.sweep_id.empty() &&
      (record.status == status::k_completed || record.status == status::k_failed)) {
    // Stopped at a rung on its target (python/mlw/rungs.py): Stopped, the decision its problem.
    for (const auto& decision : read_decisions(m_run_dir / "metrics.jsonl")) {
      if (decision.verdict != "stopped") continue;
      record.status = status::k_stopped;
      record.problems.push_back(decision.text);
      return;
    }
    return;
  }
  if (record.status != status::k_canceled) return;
  // A sweep's early-stopping rule canceled it (docs/sweeps.md): Stopped, with the reason.
  const auto reason = read_file_if_exists(m_run_dir / k_stop_reason_file);
  if (!reason) return;
  record.status = status::k_stopped;
  record.problems.push_back(trim(*reason));
}

void RunRecorder::end() {
  if (record.status != status::k_lost) record.process_group = 0;
  // Why it was canceled, where mlw itself asked (canceled()); `experiment cancel` says nothing.
  if (record.status == status::k_canceled) {
    const std::string why = trim(read_file_if_exists(m_run_dir / "cancel_requested").value_or(""));
    if (!why.empty()) record.problems.push_back(why);
  }
  record.end_ms = ctx.clock->now_ms();
  record.pid = 0;
  save(true);
}

}  // namespace mlw

// `mlw experiment shell`: into a running run, on its target (docs/cli.md, issue 48).

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <string>
#include <vector>

#include "mlw/api/experiment.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/process.hpp"
#include "run_start.hpp"

namespace mlw::api {

namespace {

/// Why a run of this status cannot be reached by `command` (shell, forward), with what to do
/// instead; "" for a Running one.
std::string not_running(const RunRecord& record, const std::string& command) {
  const std::string& id = record.run_id;
  if (status::is_final(record.status)) {
    std::string how = record.status;
    if (record.exit_code) how += fmt::format(", exit {}", *record.exit_code);
    return fmt::format(
        "run {} has ended ({}) at {}: there is nothing to {}; its output: "
        "mlw history logs -r {}",
        id, how, format_utc(record.end_ms), command, id);
  }
  if (record.status == status::k_lost) {
    return fmt::format(
        "run {} is Lost (its supervisor is gone): follow it again first with: mlw "
        "history logs -f -r {}",
        id, id);
  }
  if (record.status != status::k_running) {
    return fmt::format(
        "run {} is {}: its script has not started yet; try again once history "
        "info -r {} says Running",
        id, record.status, id);
  }
  return {};
}

}  // namespace

RunningRun load_running(Context& ctx, const std::string& run_id, const std::string& command) {
  const Project& project = ctx.project();
  HistoryStore store(project.state_dir());
  store.reconcile_lost(host_name());
  RunningRun run;
  run.record = store.load(run_id);
  const RunRecord& record = run.record;
  if (record.user != user_name()) {
    throw Error(fmt::format("run {} is {}'s: experiment {} reaches only your own runs", run_id,
                            record.user, command));
  }
  if (const std::string why = not_running(record, command); !why.empty()) throw Error(why);
  run.compute = load_compute(project, record.target);
  if (run.compute.type != record.target_type) {
    throw Error(
        fmt::format("run {} ran on a {} target, but aml_config/{}.compute is now {}: it "
                    "cannot be reached from here",
                    run_id, record.target_type, record.target, run.compute.type));
  }
  run.run_dir = store.run_dir(run_id);
  return run;
}

int shell(Context& ctx, const std::string& run_id, const std::vector<std::string>& command,
          TtyChoice tty) {
  ctx.codes = CommandCodes::Submit;
  RunningRun run = load_running(ctx, run_id, "shell");
  JoinRequest request;
  request.record = std::move(run.record);
  request.compute = std::move(run.compute);
  request.run_dir = std::move(run.run_dir);
  const RunRecord& record = request.record;
  request.command = command;
  const bool terminal = ::isatty(STDIN_FILENO) == 1;
  request.pty =
      terminal && (tty == TtyChoice::Force || (tty == TtyChoice::Auto && command.empty()));
  if (tty == TtyChoice::Force && !terminal) {
    spdlog::warn("no terminal on the target: this command's standard input is not a terminal");
  }
  spdlog::debug("entering run {} on {} ({}, {})", run_id, record.target, record.target_type,
                request.pty ? "a terminal" : "no terminal");
  std::cout.flush();
  std::cerr.flush();
  return ctx.executor(record.target_type)->join(ctx, request);
}

}  // namespace mlw::api

// `experiment shell` at each kind's place: exec/enter.sh, joined to this terminal, on this
// machine's /bin/sh or on an SSH login of its own (never the kept connection, which has no pty);
// for a batch kind, through its own program (kinds/KIND/shell.sh) to the job's node.

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "kind_program.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/local.hpp"
#include "mlw/exec/target.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// What enter.sh is told: where the run is, how to reach its container or its script.
struct EnterAt {
  std::string folder;     ///< the run's folder on the machine (relative: to its $HOME)
  std::string container;  ///< the run's container; "": it has none
  std::string docker;     ///< docker's words, space-separated
  std::string pid;        ///< the run's script where mlw knows it; "": script.pid
};

int enter(Shell& shell, const JoinRequest& request, const EnterAt& at) {
  std::vector<std::string> words = {"mlw_enter", request.record.run_id,   at.folder, at.container,
                                    at.docker,   request.pty ? "1" : "0", at.pid};
  words.insert(words.end(), request.command.begin(), request.command.end());
  return shell.run_joined(script_call("src/exec/enter.sh", words), request.pty);
}

}  // namespace

int Executor::join(Context&, const JoinRequest& request) {
  throw Error(
      fmt::format("experiment shell cannot enter runs on {} targets", request.compute.type));
}

int LocalExecutor::join(Context& ctx, const JoinRequest& request) {
  if (request.record.process_group <= 0) {
    throw Error(fmt::format("run {} has not started its script yet: try again in a moment",
                            request.record.run_id));
  }
  const auto shell = ctx.connector->local_shell();
  return enter(*shell, request,
               {request.run_dir.string(), "", "", std::to_string(request.record.process_group)});
}

int TargetExecutor::join(Context& ctx, const JoinRequest& request) {
  const RunRecord& record = request.record;
  // A batch kind enters its jobs through its own program (kinds/KIND/shell.sh), if it has one.
  const auto batch_program = kind_program(m_kind.name, "shell");
  if (m_kind.runner.batch && !batch_program) {
    throw Error(fmt::format("experiment shell cannot enter {} jobs yet (run {} is job {} there)",
                            m_kind.name, record.run_id, record.job_id));
  }
  EnterAt at;
  std::unique_ptr<Shell> shell;
  if (m_place.connects()) {
    ConnectRequest login;
    login.reuse = false;  // a pty needs a channel of a session of its own
    shell = ctx.connector->connect(ctx, record.target, request.compute, login);
    at.folder = ".mlw/runs/" + record.run_id;
  } else {
    shell = ctx.connector->local_shell();
    at.folder = request.run_dir.string();
  }
  if (batch_program) {
    std::vector<std::string> words = {"mlw_shell", record.job_id, at.folder,
                                      request.pty ? "1" : "0",
                                      script_body("src/exec/enter.sh") + "\nmlw_enter \"$@\"\n"};
    words.insert(words.end(), request.command.begin(), request.command.end());
    return shell->run_joined(script_call(*batch_program, words), request.pty);
  }
  if (m_kind.runner.image) {
    at.container = container_name(record.run_id);
    at.docker = mlw::join(docker_words(request.compute), " ");
  }
  return enter(*shell, request, at);
}

}  // namespace mlw

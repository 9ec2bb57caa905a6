// `experiment forward` at each kind's place: where a running run's port is, and the login that
// reaches it (never the kept connection, whose session carries only conversations).

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
#include "mlw/util/shell_quote.hpp"

namespace mlw {

void Executor::forward(Context&, ForwardRequest& request) {
  throw Error(
      fmt::format("experiment forward cannot reach runs on {} targets", request.compute.type));
}

void LocalExecutor::forward(Context& ctx, ForwardRequest& request) {
  for (auto& port : request.ports) port.to.host = "localhost";
  ctx.connector->local_shell()->forward(request.ports, request.keep_going);
}

void TargetExecutor::forward(Context& ctx, ForwardRequest& request) {
  const RunRecord& record = request.record;
  // A batch kind reaches its jobs through its own program (kinds/KIND/forward.sh), if it has one.
  const auto batch_program = kind_program(m_kind.name, "forward");
  if (m_kind.runner.batch && !batch_program) {
    throw Error(fmt::format(
        "experiment forward cannot reach {} jobs yet (run {} is job {} there): ssh -L to the "
        "node that runs it",
        m_kind.name, record.run_id, record.job_id));
  }
  std::unique_ptr<Shell> shell;
  if (m_place.connects()) {
    ConnectRequest login;
    login.reuse = false;  // channels of a session of its own
    shell = ctx.connector->connect(ctx, record.target, request.compute, login);
  } else {
    shell = ctx.connector->local_shell();
  }
  const std::string relay = script_body("src/exec/relay.sh");
  for (auto& port : request.ports) {
    port.to.host = "localhost";
    if (m_kind.runner.batch) {
      port.to.command =
          script_call(*batch_program, {"mlw_forward", record.job_id, ".mlw/runs/" + record.run_id,
                                       std::to_string(port.to.port), relay});
      continue;
    }
    if (!m_kind.runner.image) continue;
    // The container has no address this machine or the target reaches: the run's Python
    // connects from inside it (exec/relay.sh), over docker exec -i.
    std::string command;
    for (const auto& word : docker_words(request.compute)) command += shell_quote(word) + " ";
    command += "exec -i " + shell_quote(container_name(record.run_id)) + " /bin/sh -c " +
               shell_quote(relay) + " mlw-relay " + std::to_string(port.to.port);
    port.to.command = command;
  }
  shell->forward(request.ports, request.keep_going);
}

}  // namespace mlw

#include "mlw/exec/target.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "mlw/exec/build_output.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/exec/ship.hpp"
#include "mlw/history/store.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

bool is_local_docker(const std::string& type) {
  return !kind_of(type).uses_ssh;
}

/// Whether the kind builds and uses an environment image (docker, remotedocker).
bool uses_image(const std::string& type) {
  return kind_of(type).uses_image;
}

std::string expand_on_target(const std::string& path, const std::string& home) {
  if (path == "~") return home;
  if (starts_with(path, "~/")) return home + path.substr(1);
  return path;
}

TargetRunPaths run_paths(const RunPlan& plan, const TargetFacts& facts) {
  TargetRunPaths paths;
  if (is_local_docker(plan.compute.type)) {
    paths.run_dir = fs::absolute(plan.run_dir).string();
    paths.share_dir =
        share_folder(expand_user(plan.compute.native_shared_directory).string(), plan);
  } else {
    paths.run_dir = facts.home + "/.mlw/runs/" + plan.record.run_id;
    paths.share_dir =
        share_folder(expand_on_target(plan.compute.native_shared_directory, facts.home), plan);
  }
  return paths;
}

/// The docker target: the snapshot is already in the run's history folder; adds the helper and
/// the environment's build files beside it.
void prepare_local_run_dir(const RunPlan& plan, const EnvironmentSpec& env) {
  const fs::path run = plan.run_dir;
  for (const auto& [path, contents] : run_folder_files(env)) {
    make_directories((run / path).parent_path());
    atomic_write_file(run / path, contents);
  }
  make_directories(run / "env" / "files");
  for (const auto& entry : env.local_files) {
    const fs::path target = run / "env" / "files" / entry.path;
    make_directories(target.parent_path());
    std::error_code ec;
    fs::copy_file(run / "snapshot" / entry.path, target, ec);
  }
  make_directories(run / "snapshot" / "outputs");
  if (!fs::exists(run / "driver_log.txt")) atomic_write_file(run / "driver_log.txt", "");
}

/// The local docker target's facts from the Engine API (no process started): the image, and the
/// daemon's version and runtimes when they matter. Nothing where the API cannot be used or does
/// not answer (the shell probe then gives the facts, and its clear error).
std::unique_ptr<DockerEngine> probe_engine(Context& ctx, const ComputeConfig& compute,
                                           const std::string& tag, TargetFacts& facts) {
  if (compute.use_sudo) return nullptr;
  auto engine = ctx.connector->local_engine();
  if (!engine) return nullptr;
  TargetFacts found;
  try {
    const char* home = std::getenv("HOME");
    if (!home || !*home) return nullptr;
    found.home = home;
    if (!tag.empty() && engine->request("GET", "/images/" + tag + "/json").status == 200) {
      found.image_present = tag;
      found.docker_ok = true;
    }
    if (!found.docker_ok || compute.nvidia_docker) {
      const EngineResponse info = engine->request("GET", "/info");
      const auto json = nlohmann::json::parse(info.body, nullptr, false);
      if (info.status != 200 || !json.is_object()) return nullptr;
      found.docker_ok = true;
      found.docker_detail = json.value("ServerVersion", "");
      found.nvidia_runtime = json.contains("Runtimes") && json["Runtimes"].is_object() &&
                             json["Runtimes"].contains("nvidia");
    }
  } catch (const Error& e) {
    spdlog::debug("the Docker engine API is not usable here ({}); using the docker command",
                  e.what());
    return nullptr;
  }
  found.nvidia_docker_binary = find_executable("nvidia-docker").has_value();
  facts = found;
  return engine;
}

/// How a supervisor connects again after the connection dropped (nothing on this machine).
Reconnect reconnect_to(Context& ctx, const RunPlan& plan) {
  if (!kind_of(plan.compute.type).uses_ssh) return nullptr;
  return [&ctx, &plan] { return ctx.connector->connect(ctx, plan.target_name, plan.compute); };
}

/// Whether a local docker run goes through the Engine API: the default container (shared
/// volumes, no extra docker run arguments, no nvidia-docker wrapper); else the docker command.
bool runs_in_engine(const ComputeConfig& compute, const TargetFacts& facts) {
  return compute.shared_volumes && compute.docker_run_args.empty() && !compute.use_sudo &&
         (!compute.nvidia_docker || facts.nvidia_runtime);
}

}  // namespace

TargetExecutor::TargetExecutor(std::string type) : m_type(std::move(type)) {}

void TargetExecutor::connect(Context& ctx, const std::string& target_name,
                             const ComputeConfig& compute, const std::string& image_tag,
                             const ProbeShip* ship) {
  if (is_local_docker(m_type)) {
    m_shell = ctx.connector->local_shell();
    m_engine = probe_engine(ctx, compute, image_tag, m_facts);
  } else if (!m_shell) {
    m_shell = ctx.connector->connect(ctx, target_name, compute);
  }
  // A run's probe does not ask the free disk (only doctor shows it; two processes less).
  if (!m_engine)
    m_facts = probe_target(*m_shell, compute, probe_ask(compute), image_tag, ship, false);
  // The kind's checks, as doctor shows them: the first that refuses stops the submit.
  std::vector<CheckRow> rows;
  kind_of(m_type).checks({compute, m_facts, m_shell->host(), target_name}, rows);
  refuse_first(rows);
}

void TargetExecutor::open(Context& ctx, const std::string& target_name,
                          const ComputeConfig& compute) {
  if (!is_local_docker(m_type) && !m_shell)
    m_shell = ctx.connector->connect(ctx, target_name, compute);
}

void TargetExecutor::validate(Context& ctx, const RunPlan& plan) {
  if (uses_image(m_type) && plan.compute.base_docker_image.empty()) {
    throw Error(fmt::format("aml_config/{}.compute sets no baseDockerImage", plan.target_name),
                exit_code::k_cannot_start);
  }
  // A malformed dependency file fails here, before connecting. The spec is made again in start:
  // its files from the project (pip wheels) come from the snapshot, which is not taken yet.
  const std::string tag = uses_image(m_type) ? environment_spec(plan).tag : "";
  // With the snapshot taken (prepare), the content ships in the probe's round trip.
  if (is_local_docker(m_type) || plan.manifest.entries.empty()) {
    connect(ctx, plan.target_name, plan.compute, tag);
    return;
  }
  open(ctx, plan.target_name, plan.compute);
  const ProbeShip ship = ship_in_probe(plan, *m_shell);
  connect(ctx, plan.target_name, plan.compute, tag, &ship);
}

RunHandle TargetExecutor::start(Context& ctx, RunPlan& plan) {
  const EnvironmentSpec env = uses_image(m_type) ? environment_spec(plan) : EnvironmentSpec{};
  TargetRunPaths paths = run_paths(plan, m_facts);
  if (is_local_docker(m_type)) {
    prepare_local_run_dir(plan, env);
    make_directories(paths.share_dir);
  } else if (m_facts.ship_code == 0 && !kind_of(m_type).batch &&
             (!uses_image(m_type) || m_facts.image_present == env.tag)) {
    // The probe found every object in the store and nothing is to be built: the monitor's
    // launch makes the run folder (no ship step).
    paths.tree = run_tree_tar(plan, env, m_facts.home + "/.mlw");
    remember_shipped(plan, *m_shell);
  } else {
    ship_after_probe(ctx, plan, env, paths, true);
  }
  const bool in_engine = runs_in_engine(plan.compute, m_facts) && m_engine;
  RunHandle handle = start_supervisor(plan, [&](int live_fd) {
    try {
      return supervise(ctx, plan, paths, live_fd, in_engine, uses_image(m_type) ? &env : nullptr,
                       false);
    } catch (const std::exception& e) {
      try {
        HistoryStore store(plan.history_dir);
        RunRecord record = store.load(plan.record.run_id);
        if (!status::is_final(record.status)) {
          record.mark_failed(exit_code::k_cannot_start, e.what(), ctx.clock->now_ms());
          store.save(record);
        }
      } catch (const std::exception&) {
      }
      throw;
    }
  });
  if (m_shell) m_shell->abandon();
  return handle;
}

void TargetExecutor::reattach(Context& ctx, RunPlan& plan) {
  connect(ctx, plan.target_name, plan.compute);
  const TargetRunPaths paths = run_paths(plan, m_facts);
  const bool in_engine = is_local_docker(m_type) && plan.record.process_group == 0 &&
                         fs::exists(plan.run_dir / "container");
  if (in_engine && !m_engine) {
    throw Error(
        fmt::format("run {} was started through the Docker Engine API, which does not "
                    "answer here; start the Docker engine and follow the run again",
                    plan.record.run_id));
  }
  if (!in_engine && plan.record.process_group <= 0) {
    throw Error(
        fmt::format("run {} has no monitor to follow on {}", plan.record.run_id, m_shell->host()));
  }
  RunHandle handle = start_supervisor(plan, [&](int live_fd) {
    return supervise(ctx, plan, paths, live_fd, in_engine, nullptr, true);
  });
  if (m_shell) m_shell->abandon();
  ::close(handle.output_fd);
}

int TargetExecutor::supervise(Context& ctx, RunPlan& plan, const TargetRunPaths& paths, int live_fd,
                              bool in_engine, const EnvironmentSpec* env, bool resume) {
  ctx.stdin_is_terminal = ctx.stderr_is_terminal = ctx.stdout_is_terminal = false;
  // The supervisor writes driver_log.txt unless a monitor on this machine does.
  RunSession session(ctx, plan, std::move(m_shell), m_facts, paths, live_fd,
                     !is_local_docker(m_type) || in_engine, reconnect_to(ctx, plan));
  const auto driver =
      in_engine ? engine_driver(std::move(m_engine)) : kind_of(m_type).make_driver();
  return resume ? session.resume(*driver) : session.run(*driver, env);
}

void TargetExecutor::stop(Context&, const RunRecord&, bool) {}

void TargetExecutor::ship_after_probe(Context& ctx, const RunPlan& plan, const EnvironmentSpec& env,
                                      const TargetRunPaths& paths, bool build) {
  // The probe's ship: 0, the store holds it all; 3, it named what it lacks (sent now, ahead).
  const std::optional<int> code = m_facts.ship_code;
  if (code == 0 && !build) {
    remember_shipped(plan, *m_shell);
    return;
  }
  std::vector<std::string> lacking;
  for (const auto& line : m_facts.ship_said) {
    if (line != ":missing") lacking.push_back(line);
  }
  if (code == 3 && !m_facts.ship_said.empty() && m_facts.ship_said.back() == ":missing") {
    ship_snapshot(ctx, *m_shell, plan, m_facts.home + "/.mlw", env, paths.run_dir, build, &lacking);
  } else if (code == 0) {
    lacking.clear();
    ship_snapshot(ctx, *m_shell, plan, m_facts.home + "/.mlw", env, paths.run_dir, build, &lacking);
  } else {
    if (code) {
      spdlog::debug("the ship in the probe ended {}: {}", *code, join(m_facts.ship_said, "; "));
    }
    ship_snapshot(ctx, *m_shell, plan, m_facts.home + "/.mlw", env, paths.run_dir, build);
  }
}

PrepareResult TargetExecutor::prepare(Context& ctx, RunPlan& plan, const OutputSink& on_output) {
  const EnvironmentSpec env = environment_spec(plan);
  const TargetRunPaths paths = run_paths(plan, m_facts);
  // With the image there, nothing is built: only the content is shipped (for the next submit).
  const bool build = m_facts.image_present != env.tag;
  if (is_local_docker(m_type)) {
    if (build) {
      materialize_snapshot(plan.manifest, plan.project.state_dir() / "objects", plan.project.root,
                           plan.run_dir / "snapshot");
      prepare_local_run_dir(plan, env);
    }
  } else {
    ship_after_probe(ctx, plan, env, paths, build);
  }
  std::string log;
  const ShellResult result =
      ensure_image(*m_shell, plan, m_facts, env, paths, [&](std::string_view chunk) {
        log.append(chunk);
        on_output(chunk);
      });
  if (!is_local_docker(m_type) && build) {
    m_shell->run("rm -rf " + shell_quote(paths.run_dir) + " >/dev/null 2>&1 </dev/null &");
  }
  if (result.exit_code != 0) {
    const BuildFailure reason = build_failure_reason(log);
    const std::string base =
        base_image_problem(log, plan.compute.base_docker_image, m_shell->host());
    if (!base.empty()) throw Error(base);
    const std::string why = build_error_line(log);
    throw Error(reason.exit_code != 0
                    ? reason.message
                    : fmt::format("building the environment {} on {} failed (exit {}){}", env.tag,
                                  m_shell->host(), result.exit_code,
                                  why.empty() ? "" : ": " + why));
  }
  return {env.tag, m_shell->host(), log.find("Building environment") != std::string::npos};
}

std::vector<std::string> TargetExecutor::clean(Context& ctx, const std::string& target_name,
                                               const ComputeConfig& compute) {
  connect(ctx, target_name, compute);
  std::vector<std::string> removed;
  if (uses_image(m_type)) {
    const std::string docker = shell_join(docker_words(compute, m_facts));
    const ShellResult images =
        m_shell->run(docker +
                     " images --filter reference='mlw_env:*' --format '{{.Repository}}:{{.Tag}}' | "
                     "xargs -r " +
                     docker + " rmi 2>&1 | grep -i untagged; exit 0");
    for (const auto& line : split(trim(images.output), '\n')) {
      if (!trim(line).empty())
        removed.push_back("image " + trim(line).substr(trim(line).find(' ') + 1));
    }
  }
  if (!is_local_docker(m_type)) {
    const std::string store = shell_quote(m_facts.home + "/.mlw");
    const ShellResult files = m_shell->run(
        "cd " + store +
        " 2>/dev/null || exit 0\n"
        "n=$(ls objects 2>/dev/null | wc -l); rm -rf objects incoming; echo \"objects $n\"\n"
        "for r in runs/*/; do { [ -e \"$r/exit_code\" ] || [ -e \"$r/batch_state\" ]; } && "
        "rm -rf \"$r\" && echo \"run $r\"; done; "
        "exit 0");
    for (const auto& line : split(trim(files.output), '\n')) {
      if (!trim(line).empty()) removed.push_back(trim(line));
    }
  }
  return removed;
}

}  // namespace mlw

#include "mlw/exec/target.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "mlw/exec/build_output.hpp"
#include "mlw/exec/local.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/exec/ship.hpp"
#include "mlw/history/store.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The facts of a place whose Docker engine mlw speaks to directly, from its API (no process
/// started): the image, and the daemon's version and runtimes when they matter. Nothing where the
/// API cannot be used or does not answer (the shell probe then gives the facts, and its clear
/// error).
std::unique_ptr<DockerEngine> probe_engine(Context& ctx, const Place& place,
                                           const ComputeConfig& compute, const std::string& tag,
                                           TargetFacts& facts) {
  if (compute.use_sudo) return nullptr;
  auto engine = place.engine(ctx);
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
  // The engine is this machine's: a lease takes this machine's GPUs.
  if (compute.gpus_per_run != "all") found.gpus = this_machine_gpus(ctx);
  facts = found;
  return engine;
}

}  // namespace

TargetExecutor::TargetExecutor(const TargetKind& kind) : TargetExecutor(kind, *kind.place) {}

TargetExecutor::TargetExecutor(const TargetKind& kind, const Place& place)
    : m_kind(kind), m_place(place) {}

void TargetExecutor::connect(Context& ctx, const std::string& target_name,
                             const ComputeConfig& compute, const std::string& image_tag,
                             ProbeShip* ship) {
  open(ctx, target_name, compute);
  if (m_kind.runner.image) m_engine = probe_engine(ctx, m_place, compute, image_tag, m_facts);
  // A run's probe does not ask the free disk (only doctor shows it; two processes less).
  if (!m_engine) {
    m_facts = probe_target(*m_shell, compute, probe_ask(compute), image_tag, ship, false);
    if (ship) m_ship = read_ship_answer(*ship);
  }
  // The kind's checks, as doctor shows them: the first that refuses stops the submit.
  std::vector<CheckRow> rows;
  m_kind.checks({compute, m_facts, m_shell->host(), target_name}, rows);
  refuse_first(rows);
}

void TargetExecutor::open(Context& ctx, const std::string& target_name,
                          const ComputeConfig& compute) {
  if (!m_shell) m_shell = m_place.open(ctx, target_name, compute);
}

int TargetExecutor::gpus_seen(Context&) const {
  return m_shell ? static_cast<int>(m_facts.gpus.size()) : -1;
}

void TargetExecutor::validate(Context& ctx, const RunPlan& plan) {
  if (m_kind.runner.image && plan.compute.base_docker_image.empty()) {
    throw Error(fmt::format("aml_config/{}.compute sets no baseDockerImage", plan.target_name),
                exit_code::k_cannot_start);
  }
  // A malformed dependency file fails here, before connecting. The spec is made again in start:
  // its files from the project (pip wheels) come from the snapshot, which is not taken yet.
  const std::string tag = m_kind.runner.image ? environment_spec(plan).tag : "";
  open(ctx, plan.target_name, plan.compute);
  // With the snapshot taken, the content ships in the probe's round trip.
  std::optional<ProbeShip> ship;
  if (m_shell) ship = m_place.probe_ship(plan, *m_shell);
  connect(ctx, plan.target_name, plan.compute, tag, ship ? &*ship : nullptr);
}

RunHandle TargetExecutor::start(Context& ctx, RunPlan& plan) {
  const bool image = m_kind.runner.image;
  const EnvironmentSpec env = image ? environment_spec(plan) : EnvironmentSpec{};
  TargetRunPaths paths = m_place.run_paths(plan, m_facts);
  // Where the store holds every object and nothing is to be built, a monitor's launch makes the
  // run folder (no ship step); a batch job is queued with its folder in place.
  Staging how;
  how.build = true;
  how.launch_can_make_folder = !m_kind.runner.batch && (!image || m_facts.image_present == env.tag);
  m_place.stage(ctx, *m_shell, plan, env, m_ship, paths, how);
  const bool in_engine = runs_in_engine(plan.compute, m_facts) && m_engine;
  RunHandle handle = start_supervisor(plan, [&](int live_fd) {
    try {
      return supervise(ctx, plan, paths, live_fd, in_engine, image ? &env : nullptr, false);
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
  const TargetRunPaths paths = m_place.run_paths(plan, m_facts);
  // A run the place's engine API started has no monitor: its container is followed there.
  const bool in_engine = m_place.shares_run_folder() && plan.record.process_group == 0 &&
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
  // The supervisor writes driver_log.txt unless a monitor writes it into this run folder.
  RunSession session(ctx, plan, std::move(m_shell), m_facts, paths, live_fd,
                     !m_place.shares_run_folder() || in_engine, m_place,
                     m_place.reconnect(ctx, plan));
  const auto driver = in_engine ? engine_driver(std::move(m_engine)) : m_kind.runner.make_driver();
  return resume ? session.resume(*driver) : session.run(*driver, env);
}

void TargetExecutor::stop(Context&, const RunRecord&, bool) {}

PrepareResult TargetExecutor::prepare(Context& ctx, RunPlan& plan, const OutputSink& on_output) {
  const EnvironmentSpec env = environment_spec(plan);
  const TargetRunPaths paths = m_place.run_paths(plan, m_facts);
  // With the image there, nothing is built: only the content is shipped (for the next submit).
  const bool build = m_facts.image_present != env.tag;
  TargetRunPaths staged = paths;
  m_place.stage(ctx, *m_shell, plan, env, m_ship, staged, {.build = build, .prepare = true});
  std::string log;
  const ShellResult result =
      ensure_image(*m_shell, plan, m_facts, env, paths, m_place.lock_folder(plan, m_facts),
                   [&](std::string_view chunk) {
                     log.append(chunk);
                     on_output(chunk);
                   });
  m_place.after_prepare(*m_shell, paths, build);
  if (result.exit_code != 0) {
    const BuildFailure reason = build_failure_reason(log);
    const std::string base = base_image_problem(log, plan.compute.base_docker_image,
                                                m_shell->host(), plan.compute.username);
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
                                               const ComputeConfig& compute,
                                               const CleanScope& scope) {
  connect(ctx, target_name, compute);
  std::vector<std::string> removed;
  if (m_kind.runner.image) {
    std::vector<std::string> words = {"mlw_clean_images",
                                      scope.all_projects ? "" : project_label(scope.project),
                                      std::to_string(scope.image_tags.size())};
    words.insert(words.end(), scope.image_tags.begin(), scope.image_tags.end());
    for (auto& word : docker_words(compute, m_facts)) words.push_back(std::move(word));
    const ShellResult images = m_shell->run(script_call("src/exec/engine_steps.sh", words));
    for (const auto& line : split(trim(images.output), '\n')) {
      if (!trim(line).empty())
        removed.push_back("image " + trim(line).substr(trim(line).find(' ') + 1));
    }
  }
  for (auto& line : m_place.clean(*m_shell, m_facts, scope)) removed.push_back(std::move(line));
  return removed;
}

DataStore TargetExecutor::data_store(Context& ctx, const std::string& target_name,
                                     const ComputeConfig& compute) {
  DataStore store;
  // A submit's validate has connected: its shell (the kept connection) serves the store too.
  if (!m_shell) store.owned = m_place.open(ctx, target_name, compute);
  store.shell = m_shell ? m_shell.get() : store.owned.get();
  store.store = compute.data_store;
  store.runs = m_place.shares_run_folder() ? "" : "~/.mlw/runs";
  store.containers = m_kind.runner.image;
  return store;
}

}  // namespace mlw

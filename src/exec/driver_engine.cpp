// The engine driver: the local docker target's container through the Docker Engine API (create,
// start, follow its log through engine restarts, read its end, remove it).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "mlw/exec/engine_follow.hpp"
#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/lease.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The engine's error message in a response body, or the body itself.
std::string engine_message(const EngineResponse& response) {
  const auto json = nlohmann::json::parse(response.body, nullptr, false);
  if (json.is_object() && json.contains("message") && json["message"].is_string()) {
    return json["message"].get<std::string>();
  }
  return trim(response.body);
}

/// How long the Docker engine may not answer before a run shows Lost (MLW_ENGINE_RETRY, s).
int engine_retry_seconds() {
  return setting("MLW_ENGINE_RETRY");
}

class EngineDriver : public RunDriver {
 public:
  explicit EngineDriver(std::unique_ptr<DockerEngine> engine) : m_engine(std::move(engine)) {}

  bool start(RunSession& session, const std::string& image) override {
    if (!take_lease(session)) return false;
    const RunPlan& plan = session.plan;
    const std::string user = fmt::format("{}:{}", ::getuid(), ::getgid());
    const std::string name = container_name(plan.record.run_id);
    const EngineResponse created =
        m_engine->request("POST", "/containers/create?name=" + name,
                          engine_create_body(plan, session.paths, session.facts, image, user));
    const auto json = nlohmann::json::parse(created.body, nullptr, false);
    if (created.status != 201 || !json.is_object() || !json.contains("Id")) {
      session.fail(
          exit_code::k_cannot_start,
          fmt::format("docker could not create the container: {}", engine_message(created)));
      return false;
    }
    m_container = json["Id"].get<std::string>();
    atomic_write_file(plan.run_dir / "container", m_container + "\n");
    const EngineResponse started =
        m_engine->request("POST", "/containers/" + m_container + "/start");
    if (started.status != 204 && started.status != 304) {
      const std::string message = engine_message(started);
      session.append_log("docker: " + message + "\n");
      session.fail(exit_code::k_cannot_start,
                   fmt::format("docker could not start the container: {}", message));
      return false;
    }
    session.mark_running();
    watch_container(session);
    return true;
  }

  /// The GPU sampler of a container given GPUs (leased, or unleased_gpus), and a process of this
  /// machine that keeps the lease while the container's main process lives (exec/hold.sh), so
  /// that a supervisor killed with -9 does not free the GPUs of a container that goes on. None
  /// where the engine's processes are not this machine's (said at -v).
  void watch_container(RunSession& session) {
    const std::string unleased = unleased_gpus(session.plan.compute);
    if (!m_lease && unleased.empty()) return;
    const EngineResponse inspected =
        m_engine->request("GET", "/containers/" + m_container + "/json");
    const auto json = nlohmann::json::parse(inspected.body, nullptr, false);
    long long pid = 0;
    if (json.is_object() && json.contains("State") && json["State"].is_object() &&
        json["State"].contains("Pid") && json["State"]["Pid"].is_number_integer()) {
      pid = json["State"]["Pid"].get<long long>();
    }
    if (pid <= 0 || !process_start_time(static_cast<pid_t>(pid))) {
      spdlog::debug(
          "container {}'s process is not on this machine: no GPU sampling, and a lease "
          "lasts as long as this supervisor",
          m_container);
      return;
    }
    // Its GPUs' sampler: SIGTERM to the container's first process (delivered where it handles
    // it, as a process of another namespace's init), SIGKILL 10 s later.
    m_sampler = std::make_unique<LocalSampler>(
        session.plan, unleased.empty() ? gpu_list(session.record.gpus) : unleased,
        unleased.empty() ? m_lease->ticket() : "", static_cast<pid_t>(pid),
        std::vector<std::string>{"kill", "-TERM", std::to_string(pid)});
    if (!m_lease) return;
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", std::string(embedded_script("src/exec/hold.sh")), "mlw-hold",
                 std::to_string(pid)};
    try {
      m_holder = spawn(spec, {.new_session = true, .keep_fds = {m_lease->holder()}});
    } catch (const Error& e) {
      spdlog::warn("the lease is held by this supervisor only: {}", e.what());
    }
  }

  void stop_holder() {
    if (m_holder <= 0) return;
    ::kill(m_holder, SIGKILL);
    int status = 0;
    while (::waitpid(m_holder, &status, 0) < 0 && errno == EINTR) {
    }
    m_holder = -1;
  }

  /// The run's lease (gpusPerRun, maxConcurrentRuns), held by this supervisor: waits for it
  /// (Queued), then gives the container exactly its GPUs. False when it will not start.
  bool take_lease(RunSession& session) {
    if (!take_local_lease(session, m_lease)) return false;
    if (!session.record.gpus.empty()) {
      session.plan.compute.gpus = "device=" + gpu_list(session.record.gpus);
    }
    return true;
  }

  bool resume(RunSession& session) override {
    m_container = trim(read_file_if_exists(session.plan.run_dir / "container").value_or(""));
    return true;
  }

  /// Follows the container's log (after the bytes already received) until it stops, through
  /// engine restarts (engine_follow.hpp).
  void follow(RunSession& session) override {
    EngineFollowHooks hooks;
    hooks.on_log = [&](std::string_view text) { session.append_log(text); };
    hooks.canceled = [&] { return session.canceled(); };
    hooks.return_bound = std::chrono::seconds(engine_retry_seconds());
    m_followed = follow_container(*m_engine, m_container, session.offset, hooks);
    if (m_followed.outages > 0 && !m_followed.engine_lost) {
      const bool stopped =
          starts_with(m_followed.ending, "143") || starts_with(m_followed.ending, "137");
      session.record.problems.push_back(fmt::format(
          "the Docker engine at {} stopped answering during the run ({} time(s), for {:.0f} s at "
          "most); the log and the end were read after it answered again{}",
          m_engine->where(), m_followed.outages, m_followed.longest_outage_s,
          stopped ? " (an engine started without live-restore stops the containers it finds "
                    "running)"
                  : ""));
    }
  }

  /// follow_container stops the container itself when the run is canceled.
  void stop(RunSession&) override {}

  RunEnding ending(RunSession& session) override {
    if (m_sampler) m_sampler->end();
    stop_holder();
    if (m_lease) m_lease->end();  // the next run waiting for these GPUs starts now
    // Its restart policy's count (exec/restart.sh, in the container, writes it into the run
    // folder this machine shares with it), whatever the end.
    if (const auto count = read_file_if_exists(session.plan.run_dir / "restarts")) {
      if (const auto n = parse_integer(trim(*count), 0, 1000)) {
        session.record.restarts = static_cast<int>(*n);
      }
    }
    RunEnding ending;
    if (m_followed.engine_lost) {
      ending.status = status::k_lost;
      ending.lost_reason = lost_reason::k_engine;
      ending.lost_problem = fmt::format(
          "the Docker engine did not answer at {} for {} s (MLW_ENGINE_RETRY); the container may "
          "go on: once the engine is back, follow the run with history logs -f",
          m_engine->where(), engine_retry_seconds());
      return ending;
    }
    if (m_followed.container_gone) {
      ending.status = status::k_failed;
      ending.problems.push_back(
          fmt::format("the Docker engine at {} answered again but no longer knows container {}: "
                      "the run's end is unknown",
                      m_engine->where(), m_container));
      return ending;
    }
    const std::string source = fmt::format("the Docker engine at {}", m_engine->where());
    ending =
        exit_code_ending(m_followed.ending, session.record.cancel_requested, source,
                         fmt::format("the Docker engine at {} gave no exit code for container {}",
                                     m_engine->where(), m_container));
    apply_gpu_files(session.plan.run_dir, ending);
    return ending;
  }

  /// A Lost run's container may go on: it is removed by the supervisor that sees its end.
  void after_finish(RunSession& session) override {
    if (m_container.empty() || session.record.status == status::k_lost) return;
    session.close_live();
    try {
      m_engine->request("DELETE", "/containers/" + m_container + "?v=1&force=1");
    } catch (const Error& e) {
      std::fprintf(stderr, "mlw supervisor: %s\n", e.what());
    }
  }

 private:
  std::unique_ptr<DockerEngine> m_engine;
  std::unique_ptr<LocalLease> m_lease;
  std::unique_ptr<LocalSampler> m_sampler;  ///< the GPUs' sampler of a run that leases them
  pid_t m_holder = -1;  ///< exec/hold.sh: keeps the lease while the container's process lives
  std::string m_container;
  EngineFollowResult m_followed;
};

}  // namespace

std::unique_ptr<RunDriver> engine_driver(std::unique_ptr<DockerEngine> engine) {
  return std::make_unique<EngineDriver>(std::move(engine));
}

}  // namespace mlw

#include "mlw/exec/target.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "mlw/exec/engine_follow.hpp"
#include "mlw/exec/ship.hpp"
#include "mlw/exec/slurm.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/history/store.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/remote/tar.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The most of a run's metrics.jsonl brought back from a target.
constexpr std::uint64_t k_max_metrics_bytes = 256ULL << 20;
/// How long after its stop a run the target still reports as going on is waited for (cancel's
/// 10 s from SIGTERM to SIGKILL, and the time to see the end).
constexpr int k_stop_bound_s = 20;
/// How a Lost engine run's problem starts (a later supervisor removes it when it takes over).
constexpr const char* k_engine_lost = "the Docker engine did not answer";

bool is_local_docker(const std::string& type) {
  return type == "docker";
}

/// docker and remotedocker runs build and use an environment image; remote and slurm do not.
bool uses_image(const std::string& type) {
  return type == "docker" || type == "remotedocker";
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

/// Builds mlw_env:<hash> unless it exists, under a lock on the target so that concurrent submits
/// build it once. The build's output goes to `on_output`.
ShellResult ensure_image(Shell& shell, const RunPlan& plan, const TargetFacts& facts,
                         const EnvironmentSpec& env, const TargetRunPaths& paths,
                         const std::function<void(std::string_view)>& on_output) {
  // The probe's answer holds only for the same tag (before the snapshot, wheels are unknown).
  if (facts.image_present == env.tag) return ShellResult{0, "", ""};
  const std::string docker = shell_join(docker_words(plan.compute, facts));
  const std::string locks = is_local_docker(plan.compute.type)
                                ? (plan.project.state_dir() / "locks").string()
                                : facts.home + "/.mlw/locks";
  const std::string tag = shell_quote(env.tag);
  const std::string script =
      "mkdir -p " + shell_quote(locks) + " && exec 9>" + shell_quote(locks + "/" + env.hash) +
      ".lock && flock 9 || exit 125\n"
      "if " +
      docker + " image inspect " + tag +
      " >/dev/null 2>&1; then exit 0; fi\n"
      "echo 'Building environment " +
      env.tag + " from " + plan.compute.base_docker_image + "'\n" + docker +
      " build --force-rm -t " + tag + " -f " + shell_quote(paths.run_dir + "/env/Dockerfile") +
      " " + shell_quote(paths.run_dir + "/env") + " 2>&1\n";
  ShellStreams streams;
  streams.on_output = on_output;
  streams.on_errors = on_output;
  return shell.run(script, streams);
}

/// The image check alone (PrepareEnvironment: false).
bool image_exists(Shell& shell, const RunPlan& plan, const TargetFacts& facts,
                  const std::string& tag) {
  return shell
             .run(shell_join(docker_words(plan.compute, facts)) + " image inspect " +
                  shell_quote(tag) + " >/dev/null 2>&1")
             .exit_code == 0;
}

/// The local docker target's facts from the Engine API (no process started): the image, and the
/// daemon's version and runtimes when they matter. Nothing where the API cannot be used or does
/// not answer (the shell probe then gives the facts, and its clear error).
std::unique_ptr<DockerEngine> probe_engine(const ComputeConfig& compute, const std::string& tag,
                                           TargetFacts& facts) {
  if (compute.use_sudo) return nullptr;
  const auto socket = local_engine_socket();
  if (!socket) return nullptr;
  auto engine = unix_socket_engine(*socket);
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

/// Whether a local docker run goes through the Engine API: the default container (shared
/// volumes, no extra docker run arguments, no nvidia-docker wrapper); else the docker command.
bool runs_in_engine(const ComputeConfig& compute, const TargetFacts& facts) {
  return compute.shared_volumes && compute.docker_run_args.empty() && !compute.use_sudo &&
         (!compute.nvidia_docker || facts.nvidia_runtime);
}

struct Supervisor {
  Context& ctx;
  RunPlan& plan;
  std::unique_ptr<Shell> shell;
  TargetFacts facts;
  EnvironmentSpec env{};
  TargetRunPaths paths;
  int live_fd;
  RunRecord record{};
  std::optional<HistoryStore> store{};
  int local_log = -1;
  std::uint64_t offset = 0;
  std::string monitor_pid{};
  std::unique_ptr<DockerEngine> engine{};  ///< set: the container runs through the Engine API
  std::string container_id{};

  bool remote() const { return !is_local_docker(plan.compute.type); }
  bool canceled() const { return fs::exists(plan.run_dir / "cancel_requested"); }

  void say(std::string_view text) {
    if (live_fd < 0) return;
    if (::write(live_fd, text.data(), text.size()) < 0) {
      ::close(live_fd);
      live_fd = -1;
    }
  }

  void save(bool final_save) {
    if (!store) store.emplace(plan.history_dir);
    try {
      store->save(record, final_save);
    } catch (const Error& e) {
      std::fprintf(stderr, "mlw supervisor: %s\n", e.what());
    }
  }

  int fail(int code, const std::string& problem) {
    record.status = canceled() ? status::k_canceled : status::k_failed;
    record.exit_code = code;
    record.problems.push_back(problem);
    record.end_ms = ctx.clock->now_ms();
    record.pid = 0;
    save(true);
    say("mlw: " + problem + "\n");
    return 0;
  }

  /// The environment build failed: its log goes into the driver log (what `history logs` shows),
  /// and the run fails with the reason the install script gave, or with the build's exit code.
  int build_failed(int build_exit, const std::string& tail) {
    const std::string log = read_file_if_exists(plan.run_dir / "build.log").value_or(tail);
    const int fd = local_log >= 0 ? local_log
                                  : ::open((plan.run_dir / "driver_log.txt").c_str(),
                                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) write_fully(fd, log);
    if (fd >= 0 && fd != local_log) ::close(fd);
    const BuildFailure reason = build_failure_reason(tail);
    const std::string where = fmt::format("the build log is .mlw/runs/{}/build.log", record.run_id);
    if (reason.exit_code != 0) {
      return fail(reason.exit_code, fmt::format("{} ({})", reason.message, where));
    }
    std::vector<std::string> lines = split(trim(tail), '\n');
    if (lines.size() > 15) lines.erase(lines.begin(), lines.end() - 15);
    say(join(lines, "\n") + "\n");
    return fail(exit_code::k_cannot_start,
                fmt::format("building the environment {} failed (exit {}); {}", env.tag, build_exit,
                            where));
  }

  /// Runs `script`, reconnecting (bounded) when the connection drops.
  ShellResult run_reconnecting(const std::string& script, const ShellStreams& streams = {}) {
    return run_reconnecting([&] { return script; }, streams);
  }

  /// Runs the script `make_script` returns (asked again after each reconnect), reconnecting
  /// (bounded) when the connection drops; with `input`, that is its stdin, from its start on
  /// every attempt.
  ShellResult run_reconnecting(const std::function<std::string()>& make_script,
                               const ShellStreams& streams,
                               std::optional<std::string_view> input = std::nullopt) {
    using namespace std::chrono;
    const auto deadline = steady_clock::now() + seconds(setting("MLW_RECONNECT_TIMEOUT"));
    int delay_ms = 250;
    while (true) {
      try {
        if (!shell) shell = connect_target(ctx, plan.target_name, plan.compute);
        return input ? shell->run_with_input(make_script(), *input)
                     : shell->run(make_script(), streams);
      } catch (const Error& e) {
        if (!remote() || steady_clock::now() > deadline) throw;
        std::fprintf(stderr, "mlw supervisor: %s; reconnecting\n", e.what());
        shell.reset();
        std::this_thread::sleep_for(milliseconds(delay_ms));
        delay_ms = std::min(delay_ms * 2, 5000);
      }
    }
  }

  /// Names this process as the run's owner (what reconcile_lost checks).
  void claim() {
    record.pid = ::getpid();
    record.pid_start = process_start_time(::getpid()).value_or(0);
    record.boot_id = boot_id();
  }

  /// The run is under way: recorded as Running by this supervisor.
  void mark_running() {
    record.status = status::k_running;
    record.start_ms = ctx.clock->now_ms();
    claim();
    save(false);
  }

  /// The engine's error message in a response body, or the body itself.
  static std::string engine_message(const EngineResponse& response) {
    const auto json = nlohmann::json::parse(response.body, nullptr, false);
    if (json.is_object() && json.contains("message") && json["message"].is_string()) {
      return json["message"].get<std::string>();
    }
    return trim(response.body);
  }

  /// Runs the container through the Engine API: create, start, follow its log until it stops,
  /// read its exit code. Returns what follow() returns; nothing when it could not start (the run
  /// is recorded as failed).
  std::optional<std::string> run_in_engine(const std::string& image) {
    const std::string user = fmt::format("{}:{}", ::getuid(), ::getgid());
    const std::string name = container_name(plan.record.run_id);
    const EngineResponse created =
        engine->request("POST", "/containers/create?name=" + name,
                        engine_create_body(plan, paths, facts, image, user));
    const auto json = nlohmann::json::parse(created.body, nullptr, false);
    if (created.status != 201 || !json.is_object() || !json.contains("Id")) {
      fail(exit_code::k_cannot_start,
           fmt::format("docker could not create the container: {}", engine_message(created)));
      return std::nullopt;
    }
    container_id = json["Id"].get<std::string>();
    atomic_write_file(plan.run_dir / "container", container_id + "\n");
    const EngineResponse started =
        engine->request("POST", "/containers/" + container_id + "/start");
    if (started.status != 204 && started.status != 304) {
      const std::string message = engine_message(started);
      append_log("docker: " + message + "\n");
      fail(exit_code::k_cannot_start,
           fmt::format("docker could not start the container: {}", message));
      return std::nullopt;
    }
    mark_running();
    return follow_engine(0);
  }

  /// Follows the container's log (after its first `skip` bytes) until it stops, through engine
  /// restarts (engine_follow.hpp); returns its end as follow() does, or `engine-lost` /
  /// `container-gone`.
  std::string follow_engine(std::uint64_t skip) {
    EngineFollowHooks hooks;
    hooks.on_log = [&](std::string_view text) { append_log(text); };
    hooks.canceled = [&] { return canceled(); };
    hooks.return_bound = std::chrono::seconds(engine_retry_seconds());
    const EngineFollowResult followed = follow_container(*engine, container_id, skip, hooks);
    if (followed.outages > 0 && !followed.engine_lost) {
      const bool stopped =
          starts_with(followed.ending, "143") || starts_with(followed.ending, "137");
      record.problems.push_back(fmt::format(
          "the Docker engine at {} stopped answering during the run ({} time(s), for {:.0f} s at "
          "most); the log and the end were read after it answered again{}",
          engine->where(), followed.outages, followed.longest_outage_s,
          stopped ? " (an engine started without live-restore stops the containers it finds "
                    "running)"
                  : ""));
    }
    if (followed.engine_lost) return "engine-lost\n";
    if (followed.container_gone) return "container-gone\n";
    return followed.ending;
  }

  /// How long the Docker engine may not answer before a run shows Lost (MLW_ENGINE_RETRY, s).
  static int engine_retry_seconds() { return setting("MLW_ENGINE_RETRY"); }

  /// Appends to the run's driver_log.txt and the live output.
  void append_log(std::string_view text) {
    if (local_log >= 0) write_fully(local_log, text);
    say(text);
  }

  /// Starts the detached monitor (`monitor` as monitor.sh): it runs the container or script, or
  /// watches the Slurm job; false when it could not start (the run is recorded as failed).
  bool start_monitor(const std::string& monitor) {
    const std::string run = shell_quote(paths.run_dir);
    // A waiting parent reaps the monitor at once, so `tail --pid` sees it end even where init
    // reaps orphans late; it prints the monitor's pid, then lets go of the pipe.
    const std::string launch =
        "cd " + run +
        " && cat > monitor.sh && { setsid sh -c 'sh ./monitor.sh >monitor.log 2>&1 </dev/null "
        "& echo $!; exec >/dev/null 2>&1; wait' </dev/null & } | head -n 1";
    const ShellResult launched = run_reconnecting([&] { return launch; }, {}, monitor);
    monitor_pid = trim(launched.output);
    const auto pid = parse_integer(monitor_pid, 2, 1LL << 31);
    if (launched.exit_code != 0 || !pid) {
      const std::string why =
          !trim(launched.errors).empty()
              ? trim(launched.errors)
              : fmt::format("it answered \"{}\" where the monitor's pid was expected",
                            printable(trim(launched.output)));
      fail(exit_code::k_cannot_start,
           fmt::format("cannot start the run on {}: {}", shell->host(), why));
      return false;
    }
    record.process_group = static_cast<int>(*pid);
    return true;
  }

  /// A slurm run: sbatch, the job id recorded (Queued), a monitor that watches the job, Running
  /// once Slurm runs it, then its log. Nothing when sbatch refused the job (recorded as failed).
  std::optional<std::string> run_slurm() {
    const std::string run = shell_quote(paths.run_dir);
    const std::string job = sbatch_script(plan, paths);
    // Not retried on a dropped connection: the job may have been queued already.
    const ShellResult submitted = shell->run_with_input(
        "cd " + run +
            " && cat > job.sh && { sbatch --parsable job.sh || { c=$?; echo 125 > exit_code; "
            "exit $c; }; }",
        job);
    const std::string id = trim(submitted.output.substr(0, submitted.output.find(';')));
    if (submitted.exit_code != 0 || id.empty() ||
        id.find_first_not_of("0123456789") != std::string::npos) {
      fail(exit_code::k_cannot_start,
           fmt::format("sbatch on {} refused the job: {}", shell->host(),
                       trim(trim(submitted.errors) + " " + trim(submitted.output))));
      return std::nullopt;
    }
    record.job_id = id;
    record.status = status::k_queued;
    claim();
    save(false);
    say(fmt::format("Slurm job {} queued on {}.\n", id, shell->host()));
    if (!start_monitor(slurm_monitor_script(paths, id, slurm_retry_seconds()))) return std::nullopt;
    save(false);
    wait_until_started();
    mark_running();
    return follow();
  }

  /// How long the Slurm controller may not answer before a run shows Lost (MLW_SLURM_RETRY, s).
  static int slurm_retry_seconds() { return setting("MLW_SLURM_RETRY"); }

  /// Waits on the target until the monitor says the job runs (or has ended); a cancel while it
  /// is queued goes to scancel.
  void wait_until_started() {
    bool stop_sent = false;
    while (true) {
      ShellStreams streams;
      streams.should_stop = [&] { return !stop_sent && canceled(); };
      const ShellResult waited = run_reconnecting(
          fmt::format("cd {} && while [ ! -e started ] && kill -0 {} 2>/dev/null; do sleep 0.2; "
                      "done; exit 0",
                      shell_quote(paths.run_dir), monitor_pid),
          streams);
      if (!stop_sent && canceled()) {
        stop_run();
        stop_sent = true;
        continue;
      }
      if (waited.exit_code == 0) return;
    }
  }

  void stop_run() {
    const std::string run = shell_quote(paths.run_dir);
    const std::string script =
        plan.compute.type == "slurm" ? "scancel " + shell_quote(record.job_id) + " 2>&1; exit 0"
        : plan.compute.type == "remote"
            ? "cd " + run +
                  " && [ -s script.pid ] && { p=$(cat script.pid); kill -TERM \"$p\"; i=0; "
                  "while kill -0 \"$p\" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); "
                  "done; kill -KILL \"$p\" 2>/dev/null; }; exit 0"
            : "cd " + run + " && [ -s container ] && " +
                  shell_join(docker_words(plan.compute, facts)) +
                  " stop -t 10 \"$(cat container)\" >/dev/null 2>&1; exit 0";
    run_reconnecting(script);
  }

  /// Streams driver_log.txt from `offset` until the monitor has ended; returns the run folder's
  /// `exit_code` (and `oom` when the container ran out of memory).
  std::string follow() {
    using namespace std::chrono;
    bool stop_sent = false;
    steady_clock::time_point stopped_at;
    const std::string log = shell_quote(paths.run_dir + "/driver_log.txt");
    while (true) {
      ShellStreams streams;
      streams.on_output = [&](std::string_view chunk) {
        offset += chunk.size();
        if (local_log >= 0) write_fully(local_log, chunk);
        say(chunk);
      };
      streams.should_stop = [&] { return !stop_sent && canceled(); };
      run_reconnecting(
          [&] {
            return fmt::format("exec tail -c +{} -s 0.01 --pid={} -f {} 2>/dev/null", offset + 1,
                               monitor_pid, log);
          },
          streams);
      if (!stop_sent && canceled()) {
        stop_run();
        stop_sent = true;
        stopped_at = steady_clock::now();
        continue;
      }
      const std::string ended =
          plan.compute.type == "slurm"
              ? "printf 'job_code=%s\\nslurm_state=%s\\nslurm_exit=%s\\n' \"$(cat exit_code.job "
                "2>/dev/null)\" \"$(cat slurm_state 2>/dev/null)\" \"$(cat slurm_exit "
                "2>/dev/null)\"; for f in rank_exit.*; do [ -e \"$f\" ] && read -r c t < \"$f\" "
                "&& echo \"rank_${f#rank_exit.}=$c\"; done"
              : "cat exit_code 2>/dev/null; [ -e oom ] && echo oom";
      const ShellResult alive = run_reconnecting(fmt::format(
          "kill -0 {} 2>/dev/null && echo mlw-state=running && exit 0; echo mlw-state=ended; "
          "cd {} && {}; exit 0",
          monitor_pid, shell_quote(paths.run_dir), ended));
      const auto newline = alive.output.find('\n');
      const std::string state = alive.output.substr(0, newline);
      if (state == "mlw-state=ended") {
        return newline == std::string::npos ? "" : alive.output.substr(newline + 1);
      }
      if (state != "mlw-state=running") return "bad-answer " + printable(alive.output) + "\n";
      // A stopped run that the target still reports as going on is not waited for forever.
      if (stop_sent && steady_clock::now() > stopped_at + seconds(k_stop_bound_s)) {
        return "stop-unconfirmed\n";
      }
    }
  }

  int run() {
    record = plan.record;
    if (remote() || engine) {
      local_log = ::open((plan.run_dir / "driver_log.txt").c_str(),
                         O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    if (canceled()) {
      record.cancel_requested = true;
      record.status = status::k_canceled;
      record.end_ms = ctx.clock->now_ms();
      record.pid = 0;
      save(true);
      return 0;
    }
    std::string image;
    if (uses_image(plan.compute.type)) {
      image = env.tag;
      record.image_tag = image;
      if (!plan.run_config.prepare_environment && facts.image_present != env.tag &&
          !image_exists(*shell, plan, facts, env.tag)) {
        return fail(exit_code::k_cannot_start,
                    fmt::format("the environment {} is not built and PrepareEnvironment is false; "
                                "build it with: mlw experiment prepare -c {}",
                                env.tag, plan.record.run_config));
      }
      const int build_log = ::open((plan.run_dir / "build.log").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      std::string tail;
      bool announced = false;
      const ShellResult result =
          ensure_image(*shell, plan, facts, env, paths, [&](std::string_view chunk) {
            if (build_log >= 0) write_fully(build_log, chunk);
            if (!announced) {
              announced = true;
              say(fmt::format("Building environment {} (log: .mlw/runs/{}/build.log)…\n", env.tag,
                              record.run_id));
            }
            tail.append(chunk);
            if (tail.size() > 4000) tail.erase(0, tail.size() - 4000);
          });
      if (build_log >= 0) ::close(build_log);
      if (result.exit_code != 0) return build_failed(result.exit_code, tail);
    }
    std::string ending;
    if (engine) {
      const auto ended = run_in_engine(image);
      if (!ended) return 0;
      ending = *ended;
    } else if (plan.compute.type == "slurm") {
      const auto ended = run_slurm();
      if (!ended) return 0;
      ending = *ended;
    } else {
      if (!start_monitor(monitor_script(plan, paths, facts, image))) return 0;
      mark_running();
      ending = follow();
    }
    return finish(ending);
  }

  /// Takes over a run whose supervisor is gone (it goes on on the target): Running again under
  /// this process, the log picked up where the local copy ends, then the usual end.
  int resume() {
    record = plan.record;
    std::erase_if(record.problems, [](const std::string& problem) {
      return starts_with(problem, "the process that supervised the run") ||
             starts_with(problem, "the Slurm controller did not answer") ||
             starts_with(problem, k_engine_lost);
    });
    record.status = status::k_running;
    claim();
    save(false);
    const fs::path log = plan.run_dir / "driver_log.txt";
    std::error_code ec;
    const auto size = fs::file_size(log, ec);
    offset = ec ? 0 : size;
    if (remote() || engine) {
      local_log = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    if (engine) {
      container_id = trim(read_file_if_exists(plan.run_dir / "container").value_or(""));
      return finish(follow_engine(offset));
    }
    monitor_pid = std::to_string(record.process_group);
    if (plan.compute.type == "slurm") {
      // A monitor that gave up on an unanswering controller is started again; it picks the job
      // up where Slurm has it.
      const ShellResult alive = run_reconnecting(fmt::format(
          "cd {} && if kill -0 {} 2>/dev/null; then echo alive; else rm -f slurm_state; fi",
          shell_quote(paths.run_dir), monitor_pid));
      if (alive.output.find("alive") == std::string::npos) {
        const std::string monitor = read_remote_monitor();
        if (monitor.empty() || !start_monitor(monitor)) return 0;
        save(false);
      }
      wait_until_started();
    }
    return finish(follow());
  }

  /// The monitor script the run was started with (monitor.sh in its folder on the target).
  std::string read_remote_monitor() {
    return run_reconnecting("cat " + shell_quote(paths.run_dir + "/monitor.sh") + "; exit 0")
        .output;
  }

  /// Where the run's end was read from, for messages.
  std::string end_source() const {
    if (engine) return fmt::format("the Docker engine at {}", engine->where());
    return shell ? shell->host() : plan.compute.address;
  }

  /// The end of a container or script run: follow()'s exit code line and `oom`. The answer
  /// comes from the target: only a number in 0-255 counts as an exit code.
  void end_container_or_script(const std::string& ending) {
    const auto lines = split(trim(ending), '\n');
    const std::string first = lines.empty() ? "" : lines[0];
    std::optional<int> code;
    if (const auto number = parse_integer(first, 0, 255)) code = static_cast<int>(*number);
    if (first == "engine-lost") {
      record.problems.push_back(fmt::format(
          "{} at {} for {} s (MLW_ENGINE_RETRY); the container may go on: once the engine is "
          "back, follow the run with history logs -f",
          k_engine_lost, engine->where(), engine_retry_seconds()));
      record.status = status::k_lost;
      return;
    }
    if (first == "container-gone") {
      record.problems.push_back(
          fmt::format("the Docker engine at {} answered again but no longer knows container {}: "
                      "the run's end is unknown",
                      engine->where(), container_id));
      record.status = status::k_failed;
      return;
    }
    if (first == "stop-unconfirmed") {
      record.problems.push_back(fmt::format(
          "{} still reported the run as going on {} s after it was stopped; it may go on there",
          end_source(), k_stop_bound_s));
      code = 143;
    } else if (!code && !first.empty()) {
      const std::string said =
          starts_with(first, "bad-") ? first.substr(first.find(' ') + 1) : first;
      record.problems.push_back(
          fmt::format("{} answered \"{}\" where the run's exit code (0-255) was expected",
                      end_source(), printable(said)));
      code = exit_code::k_cannot_start;
    } else if (!code) {
      record.problems.push_back(
          engine ? fmt::format("the Docker engine at {} gave no exit code for container {}",
                               engine->where(), container_id)
                 : fmt::format("the run's monitor on {} ended without an exit code (see "
                               "{}/monitor.log there)",
                               end_source(), paths.run_dir));
      code = exit_code::k_cannot_start;
    }
    if (lines.size() > 1 && lines[1] == "oom") {
      code = 137;
      record.problems.push_back("the container was killed: out of memory (its memory limit)");
    }
    record.exit_code = code;
    record.status = *code == 0                ? status::k_completed
                    : record.cancel_requested ? status::k_canceled
                                              : status::k_failed;
  }

  /// The end of a Slurm job: its final state, ExitCode and the script's own exit code.
  void end_slurm(const std::string& ending) {
    std::map<std::string, std::string> values;
    for (const auto& line : split(ending, '\n')) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) values[line.substr(0, eq)] = trim(line.substr(eq + 1));
    }
    std::optional<int> script_code;
    if (const auto code = parse_integer(values["job_code"], 0, 255)) {
      script_code = static_cast<int>(*code);
    } else if (!values["job_code"].empty()) {
      record.problems.push_back(
          fmt::format("{} answered \"{}\" where the job's exit code (0-255) was expected",
                      end_source(), printable(values["job_code"])));
    }
    // Every rank's own exit code (none where Slurm stopped the rank after another failed).
    for (int rank = 0; rank < plan.compute.nodes && rank < 4096; ++rank) {
      const auto code = parse_integer(values["rank_" + std::to_string(rank)], 0, 255);
      record.node_exit_codes.push_back(code ? std::optional<int>(static_cast<int>(*code))
                                            : std::nullopt);
    }
    const SlurmEnd end = slurm_end(values["slurm_state"], values["slurm_exit"], script_code);
    record.status = end.status;
    if (end.status != status::k_lost) record.exit_code = end.exit_code;
    if (!end.problem.empty()) record.problems.push_back(end.problem);
  }

  /// Records the end of the run from what follow() returned (exit code, `oom`).
  int finish(const std::string& ending) {
    if (remote()) fetch_results();
    if (local_log >= 0) ::close(local_log);
    record.cancel_requested = canceled();
    if (plan.compute.type == "slurm") {
      end_slurm(ending);
    } else {
      end_container_or_script(ending);
    }
    if (!remote()) {
      record.outputs = collect_outputs(plan.run_dir / "snapshot" / "outputs",
                                       plan.run_dir / "outputs", record.problems);
    }
    record.metrics = last_metric_values(plan.run_dir / "metrics.jsonl", &record.problems);
    if (record.status != status::k_lost) record.process_group = 0;
    record.end_ms = ctx.clock->now_ms();
    record.pid = 0;
    save(true);
    // A Lost run's container may go on: it is removed by the supervisor that sees its end.
    if (engine && !container_id.empty() && record.status != status::k_lost) {
      if (live_fd >= 0) ::close(live_fd);
      live_fd = -1;
      try {
        engine->request("DELETE", "/containers/" + container_id + "?v=1&force=1");
      } catch (const Error& e) {
        std::fprintf(stderr, "mlw supervisor: %s\n", e.what());
      }
    }
    return 0;
  }

  /// Copies the run's metrics.jsonl from the target, streamed to disk, at most
  /// k_max_metrics_bytes of it.
  void fetch_metrics(const std::string& run) {
    const fs::path part = plan.run_dir / "metrics.jsonl.part";
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    std::uint64_t size = 0;
    ShellStreams streams;
    streams.on_output = [&](std::string_view chunk) {
      size += chunk.size();
      if (size <= k_max_metrics_bytes)
        out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    };
    streams.should_stop = [&] { return size > k_max_metrics_bytes; };
    std::error_code ec;
    try {
      run_reconnecting("cat " + run + "/metrics.jsonl 2>/dev/null; exit 0", streams);
    } catch (const Error& e) {
      record.problems.push_back(fmt::format("the metrics could not be brought back from {}: {}",
                                            shell ? shell->host() : plan.target_name, e.what()));
      fs::remove(part, ec);
      return;
    }
    out.close();
    if (size > k_max_metrics_bytes) {
      record.problems.push_back(
          fmt::format("metrics.jsonl on {} is over {} MiB; the metrics were not brought back",
                      shell->host(), k_max_metrics_bytes >> 20));
      fs::remove(part, ec);
    } else if (size > 0 && out) {
      fs::rename(part, plan.run_dir / "metrics.jsonl", ec);
    } else {
      fs::remove(part, ec);
    }
  }

  /// Brings metrics.jsonl and outputs/ back into the run's history folder, never outside it;
  /// what the target sends is bounded and checked, a malformed answer stops the transfer.
  void fetch_results() {
    const std::string run = shell_quote(paths.run_dir);
    fetch_metrics(run);
    const fs::path incoming = plan.run_dir / ".outputs-in";
    std::error_code ec;
    fs::remove_all(incoming, ec);
    SafeTarReader reader(incoming);
    ShellStreams streams;
    streams.on_output = [&](std::string_view chunk) { reader.feed(chunk); };
    streams.should_stop = [&] { return reader.failed(); };
    try {
      run_reconnecting(
          "cd " + run + "/snapshot && [ -d outputs ] && exec tar -cf - outputs; exit 0", streams);
      reader.finish();
    } catch (const Error& e) {
      record.problems.push_back(fmt::format("outputs could not all be brought back from {}: {}",
                                            shell->host(), e.what()));
    }
    for (const auto& refused : reader.refused()) {
      record.problems.push_back("output refused: " + refused);
    }
    if (fs::is_directory(incoming / "outputs")) {
      fs::rename(incoming / "outputs", plan.run_dir / "outputs", ec);
    }
    fs::remove_all(incoming, ec);
    std::vector<std::string> ignored;
    record.outputs = collect_outputs(plan.run_dir / "outputs", plan.run_dir / "outputs", ignored);
  }
};

}  // namespace

TargetExecutor::TargetExecutor(std::string type) : m_type(std::move(type)) {}

void TargetExecutor::connect(Context& ctx, const std::string& target_name,
                             const ComputeConfig& compute, const std::string& image_tag) {
  if (is_local_docker(m_type)) {
    m_shell = std::make_unique<LocalShell>();
    m_engine = probe_engine(compute, image_tag, m_facts);
  } else if (!m_shell) {
    m_shell = connect_target(ctx, target_name, compute);
  }
  if (!m_engine) m_facts = probe_target(*m_shell, compute, image_tag);
  // The kind's checks, as doctor shows them: the first that refuses stops the submit.
  std::vector<CheckRow> rows;
  kind_of(m_type).checks({compute, m_facts, m_shell->host(), target_name}, rows);
  refuse_first(rows);
}

void TargetExecutor::open(Context& ctx, const std::string& target_name,
                          const ComputeConfig& compute) {
  if (!is_local_docker(m_type) && !m_shell) m_shell = connect_target(ctx, target_name, compute);
}

void TargetExecutor::validate(Context& ctx, const RunPlan& plan) {
  if (uses_image(m_type) && plan.compute.base_docker_image.empty()) {
    throw Error(fmt::format("aml_config/{}.compute sets no baseDockerImage", plan.target_name),
                exit_code::k_cannot_start);
  }
  // A malformed dependency file fails here, before connecting.
  const std::string tag = uses_image(m_type) ? environment_spec(plan).tag : "";
  connect(ctx, plan.target_name, plan.compute, tag);
}

RunHandle TargetExecutor::start(Context& ctx, RunPlan& plan) {
  const EnvironmentSpec env = uses_image(m_type) ? environment_spec(plan) : EnvironmentSpec{};
  const TargetRunPaths paths = run_paths(plan, m_facts);
  if (is_local_docker(m_type)) {
    prepare_local_run_dir(plan, env);
    make_directories(paths.share_dir);
  } else {
    ship_snapshot(ctx, *m_shell, plan, m_facts.home + "/.mlw", env, paths.run_dir);
  }
  RunHandle handle = start_supervisor(plan, [&](int live_fd) {
    ctx.stdin_is_terminal = ctx.stderr_is_terminal = ctx.stdout_is_terminal = false;
    try {
      Supervisor supervisor{
          .ctx = ctx,
          .plan = plan,
          .shell = std::move(m_shell),
          .facts = m_facts,
          .env = env,
          .paths = paths,
          .live_fd = live_fd,
          .engine = runs_in_engine(plan.compute, m_facts) ? std::move(m_engine) : nullptr};
      return supervisor.run();
    } catch (const std::exception& e) {
      try {
        HistoryStore store(plan.history_dir);
        RunRecord record = store.load(plan.record.run_id);
        if (!status::is_final(record.status)) {
          record.status = status::k_failed;
          record.exit_code = record.exit_code.value_or(exit_code::k_cannot_start);
          record.problems.push_back(e.what());
          record.end_ms = ctx.clock->now_ms();
          record.pid = 0;
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
    ctx.stdin_is_terminal = ctx.stderr_is_terminal = ctx.stdout_is_terminal = false;
    Supervisor supervisor{.ctx = ctx,
                          .plan = plan,
                          .shell = std::move(m_shell),
                          .facts = m_facts,
                          .paths = paths,
                          .live_fd = live_fd,
                          .engine = in_engine ? std::move(m_engine) : nullptr};
    return supervisor.resume();
  });
  if (m_shell) m_shell->abandon();
  ::close(handle.output_fd);
}

void TargetExecutor::stop(Context&, const RunRecord&, bool) {}

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
    ship_snapshot(ctx, *m_shell, plan, m_facts.home + "/.mlw", env, paths.run_dir, build);
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
    throw Error(reason.exit_code != 0
                    ? reason.message
                    : fmt::format("building the environment {} on {} failed (exit {})", env.tag,
                                  m_shell->host(), result.exit_code));
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
        "for r in runs/*/; do { [ -e \"$r/exit_code\" ] || [ -e \"$r/slurm_state\" ]; } && "
        "rm -rf \"$r\" && echo \"run $r\"; done; "
        "exit 0");
    for (const auto& line : split(trim(files.output), '\n')) {
      if (!trim(line).empty()) removed.push_back(trim(line));
    }
  }
  return removed;
}

}  // namespace mlw

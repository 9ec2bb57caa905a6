// The two places runs happen today: this machine and a Linux machine over SSH (docs/
// architecture.md). Everything the executor does differently by where is here.

#include "mlw/exec/place.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "mlw/exec/ship.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/net.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

ShipAnswer read_ship_answer(const ProbeShip& ship) {
  ShipAnswer answer;
  if (!ship.ended && ship.heard.empty()) return answer;
  if (ship.ended == 0) {
    answer.state = ShipAnswer::State::Holds;
  } else if (ship.ended == 3 && !ship.heard.empty() && ship.heard.back() == ":missing") {
    answer.state = ShipAnswer::State::Lacks;
    answer.lacking.assign(ship.heard.begin(), ship.heard.end() - 1);
  } else {
    answer.state = ShipAnswer::State::Unclear;
    answer.said = fmt::format("{} ({})", join(ship.heard, "; "),
                              ship.ended ? "exit " + std::to_string(*ship.ended) : "no end");
  }
  return answer;
}

namespace {

/// Resolves the endpoint and opens a TCP connection (closed at once): doctor's first two rows.
std::pair<std::string, std::string> check_reachable(const SshEndpoint& endpoint, bool& resolved) {
  const TcpConnection connection = tcp_connect(endpoint.host, endpoint.port, 10000);
  resolved = connection.resolve_error.empty();
  if (!resolved) return {connection.resolve_error, ""};
  if (connection.fd >= 0) {
    ::close(connection.fd);
    return {"", "port " + std::to_string(endpoint.port) + " answers"};
  }
  return {connection.any_address ? errno_text(connection.connect_errno) : "no address", ""};
}

std::string expand_on_target(const std::string& path, const std::string& home) {
  if (path == "~") return home;
  if (starts_with(path, "~/")) return home + path.substr(1);
  return path;
}

/// This machine: the run folder is the run's history folder (the snapshot is there already).
class ThisMachine : public Place {
 public:
  bool connects() const override { return false; }

  std::unique_ptr<Shell> open(Context& ctx, const std::string&,
                              const ComputeConfig&) const override {
    return ctx.connector->local_shell();
  }

  std::unique_ptr<Shell> reach(Context& ctx, const std::string& target_name,
                               const ComputeConfig& compute, const DoctorRow&) const override {
    return open(ctx, target_name, compute);
  }

  std::unique_ptr<DockerEngine> engine(Context& ctx) const override {
    return ctx.connector->local_engine();
  }

  std::optional<ProbeShip> probe_ship(const RunPlan&, const Shell&) const override {
    return std::nullopt;
  }

  TargetRunPaths run_paths(const RunPlan& plan, const TargetFacts&) const override {
    TargetRunPaths paths;
    paths.run_dir = fs::absolute(plan.run_dir).string();
    paths.share_dir =
        share_folder(expand_user(plan.compute.native_shared_directory).string(), plan);
    return paths;
  }

  bool shares_run_folder() const override { return true; }

  /// Adds the helper and the environment's build files beside the snapshot (materialised
  /// first for `experiment prepare`, which takes no run's snapshot).
  void stage(Context&, Shell&, const RunPlan& plan, const EnvironmentSpec& env, const ShipAnswer&,
             TargetRunPaths& paths, Staging how) const override {
    if (how.prepare && !how.build) return;
    const fs::path run = plan.run_dir;
    if (how.prepare) {
      materialize_snapshot(plan.manifest, plan.project.state_dir() / "objects", plan.project.root,
                           run / "snapshot");
    }
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
    if (!how.prepare) make_directories(paths.share_dir);
  }

  void after_prepare(Shell&, const TargetRunPaths&, bool) const override {}

  std::function<std::unique_ptr<Shell>(bool)> reconnect(Context&, const RunPlan&) const override {
    return nullptr;
  }

  std::string lock_folder(const RunPlan& plan, const TargetFacts&) const override {
    return (plan.project.state_dir() / "locks").string();
  }

  std::vector<std::string> clean(Shell&, const TargetFacts&, const CleanScope&) const override {
    return {};
  }
};

/// A Linux machine over SSH: a content store, run folders and locks under its ~/.mlw.
class SshHost : public Place {
 public:
  bool connects() const override { return true; }

  std::unique_ptr<Shell> open(Context& ctx, const std::string& target_name,
                              const ComputeConfig& compute) const override {
    return ctx.connector->connect(ctx, target_name, compute);
  }

  std::unique_ptr<Shell> reach(Context& ctx, const std::string& target_name,
                               const ComputeConfig& compute, const DoctorRow& row) const override {
    const SshEndpoint endpoint = target_endpoint(compute);
    bool resolved = false;
    const auto [error, reached] = check_reachable(endpoint, resolved);
    row("address resolves", resolved, resolved ? endpoint.host : error,
        "fix address in aml_config/" + target_name + ".compute or ~/.ssh/config");
    if (!resolved) return nullptr;
    row("reachable", error.empty(), error.empty() ? reached : error,
        "check that sshd runs there and that port " + std::to_string(endpoint.port) + " is open");
    if (!error.empty()) return nullptr;
    try {
      ConnectRequest own_login;
      own_login.reuse = false;  // doctor checks the login itself
      auto ssh = ctx.connector->connect(ctx, target_name, compute, own_login);
      row("host key", true, ssh->fingerprint() + " is in ~/.ssh/known_hosts", "");
      row("login", true, compute.username + " with " + ssh->auth_method(), "");
      return ssh;
    } catch (const Error& e) {
      const std::string message = e.what();
      const bool host_key = message.find(": host key:") != std::string::npos;
      row(host_key ? "host key" : "login", false, message,
          host_key ? "attach again with --accept-host-key after checking the fingerprint"
                   : "attach again with -w/--password-stdin or -k");
      return nullptr;
    }
  }

  std::unique_ptr<DockerEngine> engine(Context&) const override { return nullptr; }

  std::optional<ProbeShip> probe_ship(const RunPlan& plan, const Shell& shell) const override {
    if (plan.manifest.entries.empty()) return std::nullopt;
    return ship_in_probe(plan, shell);
  }

  TargetRunPaths run_paths(const RunPlan& plan, const TargetFacts& facts) const override {
    TargetRunPaths paths;
    paths.run_dir = facts.home + "/.mlw/runs/" + plan.record.run_id;
    paths.share_dir =
        share_folder(expand_on_target(plan.compute.native_shared_directory, facts.home), plan);
    return paths;
  }

  bool shares_run_folder() const override { return false; }

  /// Nothing more when the store holds it all and the launch can make the folder; else the
  /// ship sends what the probe's ship said the store lacks (or asks the store first).
  void stage(Context& ctx, Shell& shell, const RunPlan& plan, const EnvironmentSpec& env,
             const ShipAnswer& ship, TargetRunPaths& paths, Staging how) const override {
    const std::string store = store_of(paths);
    using State = ShipAnswer::State;
    if (ship.state == State::Holds && !how.prepare && how.launch_can_make_folder) {
      paths.tree = run_tree_tar(plan, env, store);
      remember_shipped(plan, shell);
      return;
    }
    if (ship.state == State::Holds && how.prepare && !how.build) {
      remember_shipped(plan, shell);
      return;
    }
    // The run folder is made by the ship, except for prepare when nothing is built. What the
    // store lacks, where the probe's ship said (nothing where it holds all), else asked.
    const bool make_folder = how.build || !how.prepare;
    const std::vector<std::string> none;
    const std::vector<std::string>* lacking = ship.state == State::Lacks   ? &ship.lacking
                                              : ship.state == State::Holds ? &none
                                                                           : nullptr;
    if (ship.state == State::Unclear) spdlog::debug("the ship in the probe: {}", ship.said);
    ship_snapshot(ctx, shell, plan, store, env, paths.run_dir, make_folder, lacking);
  }

  void after_prepare(Shell& shell, const TargetRunPaths& paths, bool built) const override {
    if (built) shell.run(script_call("src/exec/engine_steps.sh", {"mlw_forget", paths.run_dir}));
  }

  std::function<std::unique_ptr<Shell>(bool)> reconnect(Context& ctx,
                                                        const RunPlan& plan) const override {
    return [&ctx, &plan](bool own_login) {
      ConnectRequest request;
      request.reuse = !own_login;
      return ctx.connector->connect(ctx, plan.target_name, plan.compute, request);
    };
  }

  std::string lock_folder(const RunPlan&, const TargetFacts& facts) const override {
    return facts.home + "/.mlw/locks";
  }

  std::vector<std::string> clean(Shell& shell, const TargetFacts& facts,
                                 const CleanScope& scope) const override {
    const ShellResult files = shell.run(script_call(
        "src/exec/engine_steps.sh",
        {"mlw_clean_store", facts.home + "/.mlw", scope.all_projects ? "" : scope.project}));
    std::vector<std::string> removed;
    for (const auto& line : split(trim(files.output), '\n')) {
      if (!trim(line).empty()) removed.push_back(trim(line));
    }
    return removed;
  }

 private:
  /// The target's ~/.mlw, from a run folder under it.
  static std::string store_of(const TargetRunPaths& paths) {
    return fs::path(paths.run_dir).parent_path().parent_path().string();
  }
};

}  // namespace

const Place& this_machine() {
  static const ThisMachine place;
  return place;
}

const Place& ssh_host() {
  static const SshHost place;
  return place;
}

}  // namespace mlw

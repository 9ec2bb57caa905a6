#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlw/config/compute_file.hpp"
#include "mlw/context.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/remote/docker_engine.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"

// Where a kind's runs happen (docs/architecture.md): a kind is a Place (this machine, an SSH
// host; later a Kubernetes namespace) times a Runner (src/kinds/<kind>/, a RunDriver and its
// traits). The executor asks the Place for everything that differs by where: the shell, the
// run's folders, the ship, reconnecting, the lock folder, cleaning up.

namespace mlw {

/// What a ship in the probe's step learned about the target's content store.
struct ShipAnswer {
  enum class State {
    NotAsked,  ///< no ship ran in the probe
    Holds,     ///< the store holds every object of the snapshot
    Lacks,     ///< it named the objects it lacks (in `lacking`)
    Unclear,   ///< it ended otherwise (`said` holds what it printed, for the debug log)
  };
  State state = State::NotAsked;
  std::vector<std::string> lacking;  ///< Lacks: the object names
  std::string said;                  ///< Unclear: its lines and end
};

/// Reads what a ship in the probe printed (ProbeShip::heard) into its typed answer.
ShipAnswer read_ship_answer(const ProbeShip& ship);

/// How Place::stage makes the run folder.
struct Staging {
  /// The environment image is built from the run folder (its env/ must be there now).
  bool build = false;
  /// The runner's launch can make the run folder from the store in its own step (a monitor's
  /// launch; not a batch job, which is queued with the folder in place).
  bool launch_can_make_folder = false;
  /// `experiment prepare`: the folder is needed only for the build.
  bool prepare = false;
};

/// One of doctor's rows: the check, whether it passed, what was found, how to fix it.
using DoctorRow = std::function<void(const std::string& check, bool ok, const std::string& detail,
                                     const std::string& fix)>;

/// Where runs happen: the shell, paths, reconnect, lock folder and ship of a kind's runs.
class Place {
 public:
  virtual ~Place() = default;
  /// Whether it is reached over a connection with an address and a login (the compute file's
  /// address, username, password and keys apply; attach and doctor check the login).
  virtual bool connects() const = 0;
  /// Opens its shell (connects and logs in where it is remote).
  virtual std::unique_ptr<Shell> open(Context& ctx, const std::string& target_name,
                                      const ComputeConfig& compute) const = 0;
  /// doctor: reaches it, saying each step as a row (an SSH host: the address resolves, the port
  /// answers, the host key, the login, each checked afresh); its shell, or nullptr where a step
  /// failed.
  virtual std::unique_ptr<Shell> reach(Context& ctx, const std::string& target_name,
                                       const ComputeConfig& compute,
                                       const DoctorRow& row) const = 0;
  /// Its Docker engine's API, where mlw speaks to it directly; nullptr otherwise.
  virtual std::unique_ptr<DockerEngine> engine(Context& ctx) const = 0;
  /// The ship to run in the probe's round trip for `plan`, if any (a snapshot is taken and the
  /// place keeps a content store).
  virtual std::optional<ProbeShip> probe_ship(const RunPlan& plan, const Shell& shell) const = 0;
  /// The run's folders there.
  virtual TargetRunPaths run_paths(const RunPlan& plan, const TargetFacts& facts) const = 0;
  /// Whether the run folder there is the run's own history folder (nothing to copy back).
  virtual bool shares_run_folder() const = 0;
  /// Puts the run folder in place (or leaves it to the launch, setting `paths.tree`), from what
  /// the probe's ship said.
  virtual void stage(Context& ctx, Shell& shell, const RunPlan& plan, const EnvironmentSpec& env,
                     const ShipAnswer& ship, TargetRunPaths& paths, Staging how) const = 0;
  /// After `experiment prepare` built the image: removes the folder it was built from, where
  /// that is not the run's history folder.
  virtual void after_prepare(Shell& shell, const TargetRunPaths& paths, bool built) const = 0;
  /// How a supervisor connects again after the connection dropped (empty: nothing to redo);
  /// its argument true: a login of its own, never the kept connection.
  virtual std::function<std::unique_ptr<Shell>(bool own_login)> reconnect(
      Context& ctx, const RunPlan& plan) const = 0;
  /// The folder of mlw's lock files there (environment builds).
  virtual std::string lock_folder(const RunPlan& plan, const TargetFacts& facts) const = 0;
  /// `experiment clean`: removes the content store and finished run folders there; one line
  /// per thing removed.
  virtual std::vector<std::string> clean(Shell& shell, const TargetFacts& facts,
                                         const CleanScope& scope) const = 0;
};

/// This machine: its /bin/sh, the run folder in the project's history, the local Docker socket.
const Place& this_machine();
/// A Linux machine over SSH: its login shell, ~/.mlw (content store, run folders, locks).
const Place& ssh_host();

}  // namespace mlw

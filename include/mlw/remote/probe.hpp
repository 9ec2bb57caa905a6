#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlw/config/compute_file.hpp"
#include "mlw/remote/shell.hpp"

namespace mlw {

/// One GPU as nvidia-smi reports it.
struct GpuInfo {
  std::string name;    ///< e.g. "Tesla K80"
  std::string memory;  ///< e.g. "11441 MiB"
  std::string driver;  ///< driver version
};

/// What one round trip learns about a target's machine (for runs and for doctor).
struct TargetFacts {
  std::string home;                   ///< the login user's home folder
  bool docker_ok = false;             ///< the docker daemon answers the user
  std::string docker_detail;          ///< its server version, or why it does not answer
  bool nvidia_runtime = false;        ///< the daemon lists the nvidia runtime
  bool nvidia_docker_binary = false;  ///< an nvidia-docker command exists
  std::vector<GpuInfo> gpus;          ///< empty: no nvidia-smi or no GPU
  std::uint64_t disk_free_kb = 0;     ///< free space under home
  bool python_ok = false;             ///< pythonLocation runs
  std::string python_detail;          ///< its --version, or the error
  std::string image_present;          ///< the image named to the probe, when it exists there
  /// restartAfterReboot's boot hook: crontab, systemd or none ("": not asked)
  std::string reboot_hook;
  /// The lease folder: "shared" between the machine's users, why it is not, or "" (not asked)
  std::string lease_dir;
  /// The administrator's command that makes the lease folder shared (where it is not)
  std::string lease_admin;
  /// The lines of the kind's own probe section (key, value), in order, for its checks.
  std::vector<std::pair<std::string, std::string>> section;
};

/// What the probe asks besides the machine's basics (home, GPUs, disk): the kind decides
/// (probe_ask in src/kinds/), so that this layer names no kind.
struct ProbeAsk {
  bool docker = false;  ///< the Docker engine, its NVIDIA runtime and the environment image
  bool python = false;  ///< pythonLocation's --version
  std::string section;  ///< the kind's own lines of the probe (its probe_section)
  bool reboot = false;  ///< the boot hook restartAfterReboot would use (exec/reboot.sh)
};

/// A ship in the probe's step: a script section and its stdin (ship_in_probe), and what it
/// printed (read by the Place into a typed answer: read_ship_answer).
struct ProbeShip {
  std::string script;                ///< run in a subshell, its output lines read back as ship=LINE
  std::string input;                 ///< its stdin
  std::vector<std::string> heard{};  ///< its output lines, as the probe read them
  std::optional<int> ended{};        ///< its exit code, when it ran to its end
};

/// The words that run docker on the target: `docker`, `sudo -n docker` (useSudo), or
/// `nvidia-docker` where the facts found it and no NVIDIA runtime (empty facts: plain docker).
std::vector<std::string> docker_words(const ComputeConfig& compute, const TargetFacts& facts = {});

/// src/remote/engine.sh after `mlw_engine_pl=` engine.pl's text: two shell functions,
/// mlw_engine (finds the Docker engine's unix socket where it can be asked directly) and
/// `mlw_http SECONDS METHOD PATH [BODY_FILE [ANSWER_FILE]]` (one request on it, printing the
/// status code); the Perl client's `attach` mode is the container monitor's.
std::string engine_socket_lookup();

/// The probe: one POSIX sh script that prints `key=value` lines for parse_probe. With an
/// `image_tag` it says whether that image exists; when it does (and no GPUs are asked for), the
/// daemon is taken as working without asking it for its version and runtimes.
/// With `ship`, a ship section (ProbeShip::script) runs first on the step's stdin. Without
/// `disk`, the free disk is not asked (a run's probe: only doctor and attach show it).
std::string probe_script(const ComputeConfig& compute, const ProbeAsk& ask,
                         const std::string& image_tag = "", const std::string& ship = "",
                         bool disk = true);

/// Reads the probe's output; a ship's lines go to `ship`.
TargetFacts parse_probe(const std::string& output, ProbeShip* ship = nullptr);

/// Runs the probe on `shell` (its answer bounded); with `ship`, that ship runs in the same
/// round trip (its lines and end into `ship`).
TargetFacts probe_target(Shell& shell, const ComputeConfig& compute, const ProbeAsk& ask,
                         const std::string& image_tag = "", ProbeShip* ship = nullptr,
                         bool disk = true);

}  // namespace mlw

#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlw {

/// What to start: an argv (never a shell string), its environment and working folder.
struct ProcessSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  ///< the complete environment of the process
  std::filesystem::path cwd;
};

/// How spawn() sets up a child: its standard streams (-1: /dev/null) and its session.
struct SpawnOptions {
  int stdin_fd = -1;         ///< the child's stdin
  int stdout_fd = -1;        ///< the child's stdout
  int stderr_fd = -1;        ///< the child's stderr
  bool new_session = false;  ///< setsid(): the child leads a process group of its own (a script)
  /// Descriptors above 2 the child (and what it starts) keeps open, as they are.
  std::vector<int> keep_fds = {};
};

/// Starts spec.argv (argv[0] searched on PATH when it has no slash) with spec.env (empty: this
/// process's environment) in spec.cwd (empty: here): the one fork + exec of mlw. SIGINT, SIGHUP,
/// SIGPIPE, SIGTERM and SIGQUIT are the defaults in the child. A child that cannot enter cwd or
/// exec writes "mlw: cannot …" to its stderr and exits 125 (cwd), 127 (not found) or 126.
/// Returns the child's pid; throws mlw::Error when no process can be made.
pid_t spawn(const ProcessSpec& spec, const SpawnOptions& options = {});

/// The result of a process run to completion with its output captured.
struct ProcessResult {
  int exit_code = -1;  ///< exit status, or 128+N when killed by signal N
  std::string output;  ///< stdout
};

/// Runs short helper processes (git, docker, …); an interface so unit tests can record calls.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  /// Runs `spec` to completion, capturing stdout (stderr is discarded); nullopt when it could
  /// not be started.
  virtual std::optional<ProcessResult> run(const ProcessSpec& spec) = 0;
};

/// The real ProcessRunner (spawn).
class SystemProcessRunner : public ProcessRunner {
 public:
  std::optional<ProcessResult> run(const ProcessSpec& spec) override;
};

/// The current environment as a map.
std::map<std::string, std::string> current_environment();

/// Exit code in docker's convention from a waitpid status: the code, or 128+signal.
int exit_code_from_wait_status(int status);

/// The start time of a process (field 22 of /proc/PID/stat), or nullopt when it is gone.
std::optional<unsigned long long> process_start_time(pid_t pid);

/// This boot's id (/proc/sys/kernel/random/boot_id).
std::string boot_id();

/// This machine's host name.
std::string host_name();

}  // namespace mlw

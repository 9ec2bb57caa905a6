#include "mlw/util/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

extern char** environ;

namespace mlw {

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** item = environ; item && *item; ++item) {
    const std::string entry(*item);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

namespace {

/// The NUL-terminated argv and envp arrays that execve wants, owning their strings. Built
/// before fork, so the child only calls exec.
class ExecArrays {
 public:
  /// Arrays for `spec` (argv, and "KEY=VALUE" for each variable of spec.env).
  explicit ExecArrays(const ProcessSpec& spec) {
    m_strings = spec.argv;
    for (const auto& [k, v] : spec.env) m_strings.push_back(k + "=" + v);
    for (std::size_t i = 0; i < m_strings.size(); ++i) {
      (i < spec.argv.size() ? m_argv : m_envp).push_back(m_strings[i].data());
    }
    m_argv.push_back(nullptr);
    m_envp.push_back(nullptr);
  }
  /// argv for execve.
  char* const* argv() { return m_argv.data(); }
  /// envp for execve.
  char* const* envp() { return m_envp.data(); }

 private:
  std::vector<std::string> m_strings;
  std::vector<char*> m_argv;
  std::vector<char*> m_envp;
};

/// In the child: "PREFIX: reason\n" on stderr, then exit (only async-signal-safe calls).
[[noreturn]] void child_fails(const std::string& prefix, int err, int code) {
  const char* reason = ::strerror(err);
  write_fully(2, prefix);
  write_fully(2, reason);
  write_fully(2, "\n");
  ::_exit(code);
}

}  // namespace

pid_t spawn(const ProcessSpec& spec, const SpawnOptions& options) {
  if (spec.argv.empty()) throw Error("nothing to start");
  ExecArrays arrays(spec);
  // Everything the child says is made before fork: a child of a threaded process only execs.
  const std::string cannot_enter = "mlw: cannot enter " + spec.cwd.string() + ": ";
  const std::string cannot_run = "mlw: cannot run " + spec.argv[0] + ": ";
  char* const* envp = spec.env.empty() ? environ : arrays.envp();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start " + spec.argv[0] + ": " + errno_text(errno));
  if (pid != 0) return pid;
  if (options.new_session) ::setsid();
  for (int sig : {SIGINT, SIGHUP, SIGPIPE, SIGTERM, SIGQUIT}) ::signal(sig, SIG_DFL);
  sigset_t none;  // a child of a thread that blocks signals (the dashboard's) blocks none
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  // Copies above 2 first, so that a source that is itself 0, 1 or 2 (the ProxyCommand's stderr)
  // is not overwritten before it is used.
  const int sources[3] = {options.stdin_fd, options.stdout_fd, options.stderr_fd};
  int copies[3];
  for (int i = 0; i < 3; ++i)
    copies[i] = ::fcntl(sources[i] >= 0 ? sources[i] : null_fd, F_DUPFD_CLOEXEC, 3);
  for (int i = 0; i < 3; ++i) ::dup2(copies[i], i);
  for (const int keep : options.keep_fds) {
    if (keep > 2) ::fcntl(keep, F_SETFD, 0);  // through exec
  }
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) {
    child_fails(cannot_enter, errno, exit_code::k_cannot_start);
  }
  ::execvpe(arrays.argv()[0], arrays.argv(), envp);
  const int err = errno;
  child_fails(cannot_run, err,
              err == ENOENT ? exit_code::k_not_found : exit_code::k_not_executable);
}

std::optional<ProcessResult> SystemProcessRunner::run(const ProcessSpec& spec) {
  if (spec.argv.empty()) return std::nullopt;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::nullopt;
  pid_t pid = -1;
  try {
    pid = spawn(spec, {.stdout_fd = pipe_fds[1]});
  } catch (const Error&) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return std::nullopt;
  }
  ::close(pipe_fds[1]);
  ProcessResult result;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = exit_code_from_wait_status(status);
  return result;
}

std::optional<unsigned long long> process_start_time(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  auto text = read_file_if_exists("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  const auto close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  // Fields after the command name start at field 3; the start time is field 22.
  auto fields = split(trim(text->substr(close + 2)), ' ');
  if (fields.size() < 20) return std::nullopt;
  if (fields[0] == "Z" || fields[0] == "X") return std::nullopt;
  try {
    return std::stoull(fields[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string host_name() {
  char buffer[256] = {};
  ::gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

std::string boot_id() {
  auto text = read_file_if_exists("/proc/sys/kernel/random/boot_id");
  return text ? trim(*text) : std::string();
}

}  // namespace mlw

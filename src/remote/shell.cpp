#include "mlw/remote/shell.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "mlw/util/error.hpp"
#include "mlw/util/process.hpp"

namespace mlw {

std::size_t read_held(std::string_view text, std::size_t& offset, char* buffer, std::size_t size) {
  const std::size_t n = std::min(size, text.size() - offset);
  std::copy_n(text.data() + offset, n, buffer);
  offset += n;
  return n;
}

ShellResult Shell::run_with_input(const std::string& script, std::string_view input) {
  ShellStreams streams;
  std::size_t offset = 0;
  streams.read_input = [&](char* buffer, std::size_t size) {
    return read_held(input, offset, buffer, size);
  };
  return run(script, streams);
}

int Shell::run_joined(const std::string&, bool) {
  throw Error("a shell joined to this terminal needs a login of its own, not a kept connection");
}

namespace {

/// One /bin/sh command on this machine and the ends of its three pipes. Whatever way the
/// conversation ends (a callback that throws included), the pipes are closed and the process
/// is reaped; one still running then is stopped with SIGTERM.
class LocalCommand {
 public:
  explicit LocalCommand(const std::string& script) {
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
        ::pipe2(err, O_CLOEXEC) != 0) {
      const int error = errno;
      for (int fd : {in[0], in[1], out[0], out[1]}) close_fd(fd);
      throw Error("cannot create a pipe: " + errno_text(error));
    }
    try {
      m_pid = spawn({{"/bin/sh", "-c", script}, {}, {}},
                    {.stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = err[1]});
    } catch (const Error&) {
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close_fd(fd);
      throw;
    }
    for (int fd : {in[0], out[1], err[1]}) close_fd(fd);
    m_fds[0] = in[1];
    m_fds[1] = out[0];
    m_fds[2] = err[0];
    ::fcntl(m_fds[0], F_SETFL, O_NONBLOCK);
  }
  LocalCommand(const LocalCommand&) = delete;
  LocalCommand& operator=(const LocalCommand&) = delete;
  ~LocalCommand() {
    for (int& fd : m_fds) close_fd(fd);
    if (m_pid > 0) {
      ::kill(m_pid, SIGTERM);
      wait();
    }
  }

  /// Closes the command's stdin (no more input).
  void close_input() { close_fd(m_fds[0]); }
  /// Whether stdout or stderr is still open.
  bool has_output() const { return m_fds[1] >= 0 || m_fds[2] >= 0; }

  /// One round: feeds input when the command takes it, passes on what it printed (waiting at
  /// most 200 ms for something to happen).
  void exchange(const ShellStreams& streams, ShellResult& result) {
    if (m_fds[0] >= 0 && m_offset == m_pending.size() &&
        (!streams.input_ready || streams.input_ready())) {
      m_pending.resize(sizeof m_buffer);
      m_pending.resize(streams.read_input(m_pending.data(), m_pending.size()));
      m_offset = 0;
      if (m_pending.empty()) close_input();
    }
    pollfd items[3];
    nfds_t count = 0;
    for (int i = 1; i < 3; ++i) {
      if (m_fds[i] >= 0) items[count++] = {m_fds[i], POLLIN, 0};
    }
    if (m_fds[0] >= 0 && m_offset < m_pending.size()) items[count++] = {m_fds[0], POLLOUT, 0};
    if (::poll(items, count, 200) < 0 && errno != EINTR) {
      for (int& fd : m_fds) close_fd(fd);
      return;
    }
    for (nfds_t i = 0; i < count; ++i) {
      if (items[i].revents) take(items[i].fd, streams, result);
    }
  }

  /// Waits for the command to end; its exit code (128+N for signal N).
  int wait() {
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
    return exit_code_from_wait_status(status);
  }

  /// Stops the command with SIGTERM and waits for it.
  void stop() {
    ::kill(m_pid, SIGTERM);
    for (int& fd : m_fds) close_fd(fd);
    wait();
  }

 private:
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }

  /// Writes pending input to, or reads output from, the ready `fd`.
  void take(int fd, const ShellStreams& streams, ShellResult& result) {
    if (fd == m_fds[0]) {
      const ssize_t n = ::write(fd, m_pending.data() + m_offset, m_pending.size() - m_offset);
      if (n > 0) {
        m_offset += static_cast<std::size_t>(n);
      } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
        close_input();  // the script stopped reading
      }
      return;
    }
    const ssize_t n = ::read(fd, m_buffer, sizeof m_buffer);
    if (n < 0 && errno == EINTR) return;
    const bool is_out = fd == m_fds[1];
    if (n <= 0) {
      close_fd(is_out ? m_fds[1] : m_fds[2]);
      return;
    }
    const std::string_view chunk(m_buffer, static_cast<std::size_t>(n));
    if (is_out) {
      streams.on_output ? streams.on_output(chunk) : (void)result.output.append(chunk);
    } else {
      streams.on_errors ? streams.on_errors(chunk) : (void)result.errors.append(chunk);
    }
  }

  pid_t m_pid = -1;
  int m_fds[3] = {-1, -1, -1};  // the command's stdin, stdout, stderr (our ends)
  std::vector<char> m_pending;  // input read from the streams, not yet written
  std::size_t m_offset = 0;
  char m_buffer[65536];
};

}  // namespace

ShellResult LocalShell::run(const std::string& script, const ShellStreams& streams) {
  LocalCommand command(script);
  if (!streams.read_input) command.close_input();
  ShellResult result;
  while (command.has_output()) {
    if (streams.should_stop && streams.should_stop()) {
      command.stop();
      result.exit_code = 143;
      return result;
    }
    command.exchange(streams, result);
  }
  command.close_input();
  result.exit_code = command.wait();
  return result;
}

int LocalShell::run_joined(const std::string& script, bool) {
  // As system(3): the child has the terminal; this process waits, deaf to the keyboard's
  // signals, which reach the child (the terminal's foreground process group) alone.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  const pid_t child = ::fork();
  if (child == 0) {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  pid_t waited = -1;
  if (child > 0) {
    do {
      waited = ::waitpid(child, &status, 0);
    } while (waited < 0 && errno == EINTR);
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  if (child < 0 || waited < 0) throw Error("cannot start /bin/sh on this machine");
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace mlw

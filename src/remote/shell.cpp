#include "mlw/remote/shell.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "mlw/util/error.hpp"
#include "mlw/util/process.hpp"

namespace mlw {

ShellResult Shell::run_with_input(const std::string& script, std::string_view input) {
  ShellStreams streams;
  std::size_t offset = 0;
  streams.read_input = [&](char* buffer, std::size_t size) {
    const std::size_t n = std::min(size, input.size() - offset);
    std::copy_n(input.data() + offset, n, buffer);
    offset += n;
    return n;
  };
  return run(script, streams);
}

ShellResult LocalShell::run(const std::string& script, const ShellStreams& streams) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw Error("cannot create a pipe: " + errno_text(errno));
  }
  ProcessSpec spec{{"/bin/sh", "-c", script}, current_environment(), {}};
  ExecArrays arrays(spec);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start /bin/sh: " + errno_text(errno));
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve("/bin/sh", arrays.argv(), arrays.envp());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  int in_fd = in[1];
  ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
  if (!streams.read_input) {
    ::close(in_fd);
    in_fd = -1;
  }
  ShellResult result;
  std::vector<char> pending;
  std::size_t pending_offset = 0;
  char buffer[65536];
  int open_outputs = 2;
  int fds[2] = {out[0], err[0]};
  bool stopped = false;
  while (open_outputs > 0) {
    if (streams.should_stop && streams.should_stop()) {
      ::kill(pid, SIGTERM);
      stopped = true;
      break;
    }
    if (in_fd >= 0 && pending_offset == pending.size() &&
        (!streams.input_ready || streams.input_ready())) {
      pending.resize(sizeof buffer);
      pending.resize(streams.read_input(pending.data(), pending.size()));
      pending_offset = 0;
      if (pending.empty()) {
        ::close(in_fd);
        in_fd = -1;
      }
    }
    pollfd items[3];
    nfds_t count = 0;
    for (int fd : fds) {
      if (fd >= 0) items[count++] = {fd, POLLIN, 0};
    }
    if (in_fd >= 0 && pending_offset < pending.size()) items[count++] = {in_fd, POLLOUT, 0};
    if (::poll(items, count, 200) < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < count; ++i) {
      if (!items[i].revents) continue;
      if (items[i].fd == in_fd) {
        const ssize_t n =
            ::write(in_fd, pending.data() + pending_offset, pending.size() - pending_offset);
        if (n > 0) {
          pending_offset += static_cast<std::size_t>(n);
        } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
          ::close(in_fd);  // the script stopped reading
          in_fd = -1;
        }
        continue;
      }
      const ssize_t n = ::read(items[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      const bool is_out = items[i].fd == fds[0];
      if (n <= 0) {
        ::close(items[i].fd);
        (is_out ? fds[0] : fds[1]) = -1;
        --open_outputs;
        continue;
      }
      const std::string_view chunk(buffer, static_cast<std::size_t>(n));
      if (is_out) {
        streams.on_output ? streams.on_output(chunk) : (void)result.output.append(chunk);
      } else {
        streams.on_errors ? streams.on_errors(chunk) : (void)result.errors.append(chunk);
      }
    }
  }
  for (int fd : {in_fd, fds[0], fds[1]}) {
    if (fd >= 0) ::close(fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = stopped ? 143 : exit_code_from_wait_status(status);
  return result;
}

}  // namespace mlw

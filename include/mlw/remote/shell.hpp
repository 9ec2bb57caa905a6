#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// What a shell command printed and how it ended.
struct ShellResult {
  int exit_code = -1;  ///< exit status, or 128+N when killed by signal N
  std::string output;  ///< stdout, unless streamed to ShellStreams::on_output
  std::string errors;  ///< stderr, unless streamed to ShellStreams::on_errors
};

/// Optional streaming for a shell command: input fed as it is asked for, output as it comes.
struct ShellStreams {
  /// Fills up to `size` bytes of stdin; returns 0 at the end. Empty: no input.
  std::function<std::size_t(char* buffer, std::size_t size)> read_input;
  /// Asked before read_input; false: no input yet (a conversation waiting for the command's
  /// answer, which arrives through on_output). Empty: always ready.
  std::function<bool()> input_ready;
  /// Asked before read_input: how many bytes it will surely give next, without waiting for
  /// anything the command answers (0: not known). Empty: not known.
  std::function<std::size_t()> input_known;
  /// Receives stdout as it arrives; empty: collected into ShellResult::output.
  std::function<void(std::string_view)> on_output;
  /// Receives stderr as it arrives; empty: collected into ShellResult::errors.
  std::function<void(std::string_view)> on_errors;
  /// Asked between reads; true stops waiting and closes the command's channel.
  std::function<bool()> should_stop;
};

/// A read_input over `text` held in memory: copies what follows `offset` (at most `size` bytes)
/// into `buffer` and moves `offset` past it; 0 at the end.
std::size_t read_held(std::string_view text, std::size_t& offset, char* buffer, std::size_t size);

/// Where a forwarded connection goes, as the machine sees it: a TCP port there, or a command
/// whose stdin and stdout carry the connection (a relay inside a container).
struct ForwardTo {
  std::string host = "localhost";  ///< every address of this name is tried, as ssh -L does
  int port = 0;
  std::string command;  ///< non-empty: run with /bin/sh there instead of connecting
};

/// How many connections a forwarded port queues before they are accepted.
constexpr int k_listen_backlog = 64;

/// One forwarded port: each connection accepted on `listen_fd` (bound on 127.0.0.1 here; the
/// relay listens on it, if it does not already) is carried to `to`.
struct ForwardPort {
  int listen_fd = -1;
  ForwardTo to;
};

/// A machine that runs POSIX shell scripts for mlw: this one, or one reached over SSH. Every
/// script is built from words passed through shell_quote.
class Shell {
 public:
  virtual ~Shell() = default;
  /// The host as the user named it, for messages ("gpu-vm.example.com", "this machine").
  virtual std::string host() const = 0;
  /// Runs `script` with /bin/sh on the machine and waits for it to end.
  virtual ShellResult run(const std::string& script, const ShellStreams& streams = {}) = 0;
  /// Runs `script` with `input` as its stdin.
  ShellResult run_with_input(const std::string& script, std::string_view input);
  /// Runs `script` with /bin/sh on the machine, joined to this process's stdin, stdout and
  /// stderr (`experiment shell`); `pty`: in a terminal of the machine's, sized as this one and
  /// resized with it (this one put in raw mode meanwhile). Returns its exit code (128+N: signal N).
  /// Shells that cannot (a kept connection's conversation) throw mlw::Error.
  virtual int run_joined(const std::string& script, bool pty);
  /// Carries every connection accepted on `ports` to its destination on the machine
  /// (`experiment forward`; forward.cpp) until `keep_going`, asked about once a second, says no.
  /// A connection that cannot be made is a warning; a lost machine throws mlw::Error. Shells
  /// that cannot (a kept connection's conversation) throw mlw::Error.
  virtual void forward(const std::vector<ForwardPort>& ports,
                       const std::function<bool()>& keep_going);
  /// Forgets the connection without a goodbye: the copy in a parent process whose forked child
  /// goes on using it. Nothing for shells without a connection.
  virtual void abandon() {}
  /// How the login succeeded ("key ~/.ssh/id_ed25519", "ssh-agent", "password"); empty here.
  virtual std::string auth_method() const { return {}; }
  /// The SHA256 fingerprint of the host key that was checked; empty without a connection.
  virtual std::string fingerprint() const { return {}; }
  /// True while its commands go through a kept connection that other commands of this user
  /// queue for (a long step there makes them log in themselves).
  virtual bool kept() const { return false; }
};

/// Runs scripts on this machine (the docker target); fork + exec of /bin/sh.
class LocalShell : public Shell {
 public:
  std::string host() const override { return "this machine"; }
  ShellResult run(const std::string& script, const ShellStreams& streams = {}) override;
  /// This process's terminal is the script's own: nothing to relay.
  int run_joined(const std::string& script, bool pty) override;
  /// TCP connections on this machine; a command's through a socket pair.
  void forward(const std::vector<ForwardPort>& ports,
               const std::function<bool()>& keep_going) override;
};

}  // namespace mlw

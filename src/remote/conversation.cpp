#include "conversation.hpp"

#include <fmt/format.h>

#include "mlw/util/error.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The most of a command's input sent in one counted chunk (one `head -c` on the target).
constexpr std::size_t k_chunk = 1 << 20;

/// The shell's loop: it reads a line "LENGTH i|n", then the script's LENGTH bytes, runs the
/// script in a subshell (eval: no shell started per step; a subshell's traps are the default
/// ones) with the counted input that follows, or none, and ends both
/// outputs with the marker line. Input comes in chunks ("N\n" and N bytes, "0\n" at the end).
/// `read` and `head -c` take no byte beyond their own (POSIX; GNU and busybox head read at most
/// N from a pipe), so the loop reads the next step exactly where the last ended; what the
/// script leaves of its input is read away. The shell itself reads ahead (dash does), so
/// nothing is read as commands from its stdin.
constexpr const char* k_loop =
    "mlw_in() {{ while IFS= read -r mlw_n && [ \"$mlw_n\" -gt 0 ]; do command -p head -c "
    "\"$mlw_n\" || return 1; done; }}\n"
    "while [ -n \"$mlw_l\" ] || IFS=' ' read -r mlw_l mlw_m; do mlw_s=$(command -p head -c "
    "\"$mlw_l\"); mlw_l=; "
    "if [ \"$mlw_m\" = i ]; then mlw_in | {{ ( eval \"$mlw_s\" ); mlw_c=$?; command -p cat "
    ">/dev/null; exit \"$mlw_c\"; }}; else ( eval \"$mlw_s\" ) </dev/null; fi; "
    "printf '%s %s\\n' {0} \"$?\"; printf '%s\\n' {0} >&2; done\n";

/// The files a login shell (or sshd, or PAM) reads before running a command: a shell started
/// before one of them changed may hold an environment a shell started now would not. With them
/// the folders a ~/.bashrc most often tests for ("[ -d ~/bin ] && PATH=..."): the home folder
/// (a folder made or removed in it), ~/.local and ~/.local/bin.
constexpr const char* k_login_files =
    "\"$HOME\" \"$HOME\"/.local \"$HOME\"/.local/bin \"$HOME\"/bin \"$HOME\"/.bashrc "
    "\"$HOME\"/.bash_profile \"$HOME\"/.bash_login \"$HOME\"/.profile "
    "\"$HOME\"/.bash_aliases \"$HOME\"/.zshenv \"$HOME\"/.zshrc \"$HOME\"/.cshrc "
    "\"$HOME\"/.tcshrc \"$HOME\"/.config/fish/config.fish \"$HOME\"/.ssh/environment "
    "\"$HOME\"/.ssh/rc \"$HOME\"/.pam_environment /etc/environment /etc/passwd /etc/profile "
    "/etc/profile.d /etc/bash.bashrc /etc/zsh/zshenv /etc/ssh/sshrc /etc/security/pam_env.conf";

/// A shell started ahead (before a command asks) notes when it started (a file in ~/.mlw, whose
/// clock is that of the user's files), then waits for the first step. If a login file is not
/// older than that note, it exits 86 before printing its marker, having run nothing: the
/// command then asks for a shell started now. Builtins only after the start ([ -nt ]).
std::string ahead_prelude() {
  return std::string(
             "[ -d \"$HOME/.mlw\" ] && mlw_r=$(command -p mktemp \"$HOME/.mlw/shell.XXXXXX\" "
             "2>/dev/null)\n"
             "trap 'command -p rm -f \"$mlw_r\"' EXIT\ntrap 'exit 129' HUP\ntrap 'exit 143' TERM\n"
             "IFS=' ' read -r mlw_l mlw_m || exit 0\n"
             "[ -n \"$mlw_r\" ] || exit 86\nfor mlw_f in ") +
         k_login_files +
         "; do\n  if [ -e \"$mlw_f\" ] && ! [ \"$mlw_r\" -nt \"$mlw_f\" ]; then exit 86; fi\n"
         "done\n";
}

}  // namespace

std::string conversation_command(const std::string& marker, bool ahead) {
  return "exec /bin/sh -c " + shell_quote((ahead ? ahead_prelude() : std::string("mlw_l=\n")) +
                                          framed_script(marker, fmt::format(k_loop, marker)));
}

StepEnd::StepEnd(std::string pattern, bool with_code)
    : m_pattern(std::move(pattern)), m_with_code(with_code) {}

void StepEnd::reset() {
  m_held.clear();
  m_done = false;
  m_code = -1;
}

std::string StepEnd::take(std::string_view chunk) {
  if (m_done) return {};
  m_held.append(chunk);
  const auto at = m_held.find(m_pattern);
  if (at == std::string::npos) {
    // Keep only a tail that begins the pattern ("ml", "mlw-fr"): a line's end is never held.
    std::size_t keep = std::min(m_held.size(), m_pattern.size() - 1);
    while (keep > 0 && m_held.compare(m_held.size() - keep, keep, m_pattern, 0, keep) != 0) --keep;
    std::string out = m_held.substr(0, m_held.size() - keep);
    m_held.erase(0, m_held.size() - keep);
    return out;
  }
  std::string out = m_held.substr(0, at);
  if (m_with_code) {
    const auto newline = m_held.find('\n', at + m_pattern.size());
    if (newline == std::string::npos) {
      m_held.erase(0, at);  // the code is still coming
      return out;
    }
    const auto code = parse_integer(
        m_held.substr(at + m_pattern.size(), newline - at - m_pattern.size()), 0, 255);
    m_code = code ? static_cast<int>(*code) : 255;
  }
  m_held.clear();
  m_done = true;
  return out;
}

Conversation::Conversation(std::unique_ptr<ShellPipe> pipe, std::string where,
                           const std::string& marker, bool ahead)
    : m_ahead(ahead),
      m_pipe(std::move(pipe)),
      m_where(std::move(where)),
      m_marker(marker),
      m_frames{FramedStream(m_marker), FramedStream(m_marker)},
      m_ends{StepEnd(m_marker + " ", true), StepEnd(m_marker + "\n", false)} {}

ShellResult Conversation::step(const std::string& script, const ShellStreams& streams,
                               bool& stopped) {
  if (!m_usable) throw Error("ssh " + m_where + ": the connection's shell has ended");
  m_input_done = !streams.read_input;
  m_owed = 0;
  m_outgoing += std::to_string(script.size()) + (m_input_done ? " n\n" : " i\n") + script;
  for (StepEnd& stream_end : m_ends) stream_end.reset();
  ShellResult result;
  while (true) {
    bool progress = feed_input(streams);
    progress = read_outputs(streams, result) || progress;
    if (m_ends[0].done() && m_ends[1].done()) break;
    if (m_pipe->ended()) {
      read_outputs(streams, result);
      if (m_ends[0].done() && m_ends[1].done()) break;
      return ended_early(std::move(result));
    }
    if (streams.should_stop && streams.should_stop()) {
      m_usable = false;
      stopped = true;
      result.exit_code = 143;
      return result;
    }
    if (!progress) m_pipe->wait(200);
  }
  result.exit_code = m_ends[0].code();
  m_ahead = false;                                             // it was fresh: it ran a step
  if (!m_noise_told) report_noise(m_where, m_frames, result);  // names it at -v, once
  m_noise_told = true;
  return result;
}

bool Conversation::feed_input(const ShellStreams& streams) {
  bool progress = false;
  while (true) {
    if (m_sent < m_outgoing.size()) {
      const std::size_t n = m_pipe->write(std::string_view(m_outgoing).substr(m_sent));
      m_sent += n;
      progress = progress || n > 0;
      if (m_sent < m_outgoing.size()) return progress;
    }
    m_outgoing.clear();
    m_sent = 0;
    if (m_input_done || (streams.input_ready && !streams.input_ready())) return progress;
    if (m_owed > 0) {
      stream_owed(streams);
      continue;
    }
    // A shell started ahead is sent one chunk of the step's input with the script (over a slow
    // link the wait for its marker cost a round trip), the rest once it said it runs the step.
    // A stale one exits before: the step goes to a new shell, that chunk first (taken_input).
    const bool before_marker = m_ahead && !m_frames[0].started();
    if (before_marker && m_ahead_chunk) return progress;
    // One buffer per conversation, not zeroed, and m_outgoing keeps its capacity: a fresh
    // zeroed 1 MiB per chunk cost its pages' faults (milliseconds on a virtual machine) for a
    // step's few bytes, and again for every MiB of a ship.
    if (!m_buffer) m_buffer.reset(new char[k_chunk]);
    // Input whose length is known well ahead (a tar of objects) goes as one counted chunk, sent
    // as it is read: one `head -c` there, not one per MiB (a process start costs ~1 ms there).
    const std::size_t known = streams.input_known && !before_marker ? streams.input_known() : 0;
    if (known > k_chunk) {
      m_outgoing.append(std::to_string(known)).append(1, '\n');
      m_owed = known;
      continue;
    }
    std::size_t size = 0;
    bool at_end = false;
    while (size < k_chunk) {
      const std::size_t n = streams.read_input(m_buffer.get() + size, k_chunk - size);
      if (n == 0) {
        at_end = true;
        break;
      }
      size += n;
      if (streams.input_ready && !streams.input_ready()) break;
    }
    if (before_marker) {
      m_ahead_chunk = true;  // m_buffer keeps it until the marker: no chunk is read before
      m_ahead_taken = size;
    }
    if (size > 0) {
      m_outgoing.append(std::to_string(size)).append(1, '\n').append(m_buffer.get(), size);
    }
    if (at_end) {
      m_outgoing += "0\n";
      m_input_done = true;
    }
  }
}

bool Conversation::read_outputs(const ShellStreams& streams, ShellResult& result) {
  bool progress = false;
  char buffer[65536];
  for (int stream = 0; stream < 2; ++stream) {
    while (const std::size_t n = m_pipe->read(stream, buffer, sizeof buffer)) {
      progress = true;
      const std::string_view framed = m_frames[stream].feed(std::string_view(buffer, n));
      if (framed.empty()) continue;
      const std::string chunk = m_ends[stream].take(framed);
      if (chunk.empty()) continue;
      if (stream == 0) {
        streams.on_output ? streams.on_output(chunk) : (void)result.output.append(chunk);
      } else {
        streams.on_errors ? streams.on_errors(chunk) : (void)result.errors.append(chunk);
      }
    }
  }
  return progress;
}

void Conversation::stream_owed(const ShellStreams& streams) {
  // The shell's `head -c` waits for every announced byte: input that ends short leaves it
  // waiting for bytes that are not coming, and no later step could be framed on this shell.
  m_usable = false;
  const std::size_t n = streams.read_input(m_buffer.get(), std::min(k_chunk, m_owed));
  if (n == 0) {
    throw Error(
        fmt::format("ssh {}: a command's input ended {} bytes before the length it "
                    "announced",
                    m_where, m_owed));
  }
  m_usable = true;
  m_owed -= n;
  m_outgoing.append(m_buffer.get(), n);
}

std::string_view Conversation::taken_input() const {
  if (!m_stale || !m_buffer) return {};
  return {m_buffer.get(), m_ahead_taken};
}

/// The shell ended before the step did: the login shell never ran it (what it printed is the
/// reason), or the shell or connection died under it.
ShellResult Conversation::ended_early(ShellResult result) {
  m_usable = false;
  result.exit_code = m_pipe->exit_status();
  if (m_ahead && !m_frames[0].started()) {
    m_stale = true;  // nothing ran: the step goes to a shell started now
    return result;
  }
  if (!m_frames[0].started()) {
    report_noise(m_where, m_frames, result);
    return result;
  }
  throw Error(fmt::format("ssh {}: the connection was lost (the shell there ended{})", m_where,
                          result.exit_code >= 0 ? fmt::format(", exit {}", result.exit_code) : ""));
}

}  // namespace mlw

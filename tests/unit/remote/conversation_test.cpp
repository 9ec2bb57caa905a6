// The conversation protocol against a real /bin/sh on this machine: the same shell loop a
// target runs, over pipes instead of an SSH channel.

#include "../../../src/remote/conversation.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"
#include "temp_dir.hpp"

namespace mlw {
namespace {

/// A local /bin/sh running conversation_command(marker), as a ShellPipe.
class LocalPipe : public ShellPipe {
 public:
  LocalPipe(const std::string& marker, const std::string& login_noise = "", bool ahead = false) {
    // A shell that ended leaves the write end of its stdin: EPIPE, not the test's end (an SSH
    // channel or the kept connection's socket does not raise SIGPIPE either).
    ::signal(SIGPIPE, SIG_IGN);
    int in[2], out[2], err[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    // The "login shell" prints first, then runs the command as sshd would.
    m_pid = spawn({{"/bin/sh", "-c", login_noise + conversation_command(marker, ahead)}, {}, {}},
                  {.stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = err[1]});
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    m_in = in[1];
    m_out[0] = out[0];
    m_out[1] = err[0];
    for (int fd : {m_in, m_out[0], m_out[1]}) ::fcntl(fd, F_SETFL, O_NONBLOCK);
  }
  ~LocalPipe() override {
    for (int fd : {m_in, m_out[0], m_out[1]}) ::close(fd);
    if (m_pid > 0) {  // never kill(-1)
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
  }
  std::size_t write(std::string_view data) override {
    if (m_in < 0) return 0;
    const ssize_t n = ::write(m_in, data.data(), data.size());
    if (n > 0 && m_record) m_record->append(data.substr(0, static_cast<std::size_t>(n)));
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  std::size_t read(int stream, char* buffer, std::size_t size) override {
    if (m_closed[stream]) return 0;
    const ssize_t n = ::read(m_out[stream], buffer, size);
    if (n == 0) m_closed[stream] = true;
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  bool ended() override { return m_closed[0] && m_closed[1]; }
  void wait(int ms) override {
    pollfd items[2] = {{m_out[0], POLLIN, 0}, {m_out[1], POLLIN, 0}};
    ::poll(items, 2, ms);
  }
  int waits() const override { return 0; }
  int exit_status() override {
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void end_input() { ::close(m_in), m_in = -1; }
  /// Everything written to the shell from now on goes into `record` too.
  void record_into(std::string* record) { m_record = record; }

 private:
  pid_t m_pid = -1;
  int m_in = -1;
  int m_out[2] = {-1, -1};
  bool m_closed[2] = {false, false};
  std::string* m_record = nullptr;
};

Conversation local_conversation(const std::string& noise = "") {
  const std::string marker = "mlw-frame-0123456789abcdef";
  return Conversation(std::make_unique<LocalPipe>(marker, noise), "here", marker);
}

ShellResult step(Conversation& talk, const std::string& script, std::string input = "",
                 bool with_input = false) {
  ShellStreams streams;
  std::size_t offset = 0;
  if (with_input) {
    streams.read_input = [&](char* buffer, std::size_t size) {
      const std::size_t n = std::min(size, input.size() - offset);
      std::copy_n(input.data() + offset, n, buffer);
      offset += n;
      return n;
    };
  }
  bool stopped = false;
  return talk.step(script, streams, stopped);
}

TEST(StepEnd, PassesOutputOnAndHoldsOnlyWhatBeginsThePattern) {
  StepEnd end("mlw-frame-ab ", true);
  EXPECT_EQ(end.take("a line\n"), "a line\n");  // a line's end is not held back
  EXPECT_EQ(end.take("prog"), "prog");
  EXPECT_EQ(end.take("ram ml"), "ram ");  // "ml" may begin the marker
  EXPECT_EQ(end.take("x\nmlw-frame-a"), "mlx\n");
  EXPECT_FALSE(end.done());
  EXPECT_EQ(end.take("b 4"), "");
  EXPECT_FALSE(end.done());  // the code is not whole before its newline
  EXPECT_EQ(end.take("2\n"), "");
  EXPECT_TRUE(end.done());
  EXPECT_EQ(end.code(), 42);
}

TEST(Conversation, RunsStepsInTurnWithTheirOwnOutputsAndExitCodes) {
  Conversation talk = local_conversation("echo 'Welcome!'; echo motd >&2; ");
  const ShellResult first = step(talk, "echo out; echo err >&2; exit 3");
  EXPECT_EQ(first.exit_code, 3);
  EXPECT_EQ(first.output, "out\n");  // the login shell's lines are not the command's
  EXPECT_EQ(first.errors, "err\n");
  const ShellResult second = step(talk, "printf 'no newline'");
  EXPECT_EQ(second.exit_code, 0);
  EXPECT_EQ(second.output, "no newline");
  EXPECT_TRUE(talk.usable());
}

TEST(Conversation, InputIsCountedSoAStepThatLeavesItDoesNotEatTheNext) {
  Conversation talk = local_conversation();
  std::string big(3 << 20, 'x');  // over one chunk
  big += "end";
  const ShellResult counted = step(talk, "wc -c", big, true);
  EXPECT_EQ(counted.output, std::to_string(big.size()) + "\n");
  const ShellResult ignored = step(talk, "echo ignored the input", "echo EVIL\nexit 7\n", true);
  EXPECT_EQ(ignored.output, "ignored the input\n");
  const ShellResult next = step(talk, "echo next");
  EXPECT_EQ(next.output, "next\n");
  EXPECT_EQ(next.exit_code, 0);
  const ShellResult empty = step(talk, "cat; echo done", "", true);
  EXPECT_EQ(empty.output, "done\n");
}

/// A step whose input is `given` bytes of 'x', the first `known` of them said to be known.
ShellResult step_with_known(Conversation& talk, const std::string& script, std::size_t known,
                            std::size_t given) {
  ShellStreams streams;
  std::size_t offset = 0;
  streams.read_input = [&](char* buffer, std::size_t want) {
    const std::size_t n = std::min(want, given - offset);
    std::fill_n(buffer, n, 'x');
    offset += n;
    return n;
  };
  streams.input_known = [&]() -> std::size_t { return offset < known ? known - offset : 0; };
  bool stopped = false;
  return talk.step(script, streams, stopped);
}

TEST(Conversation, InputOfAKnownLengthGoesAsOneCountedChunkStreamed) {
  const std::string marker = "mlw-frame-0123456789abcdef";
  auto pipe = std::make_unique<LocalPipe>(marker);
  std::string sent;
  pipe->record_into(&sent);
  Conversation talk(std::move(pipe), "here", marker);
  const std::size_t known = 5 << 20;
  const ShellResult counted = step_with_known(talk, "wc -c", known, known + 10);
  EXPECT_EQ(counted.exit_code, 0);
  EXPECT_EQ(trim(counted.output), std::to_string(known + 10));
  // One count for the 5 MiB (one `head -c` there, not five), then the rest, then the end.
  const std::string header = std::to_string(known) + "\n";
  ASSERT_NE(sent.find("wc -c" + header), std::string::npos);
  EXPECT_EQ(sent.find("\n1048576\n"), std::string::npos);
  EXPECT_EQ(sent.substr(sent.size() - 16), "x10\nxxxxxxxxxx0\n");  // the 5 MiB end in x
  EXPECT_EQ(step(talk, "echo next").output, "next\n");
}

TEST(Conversation, InputThatEndsShortOfItsKnownLengthEndsTheConversationWithAnError) {
  Conversation talk = local_conversation();
  const std::size_t known = 3 << 20;
  try {
    step_with_known(talk, "cat >/dev/null", known, known - 100);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input ended 100 bytes before the length it announced"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(talk.usable());
}

TEST(Conversation, OutputThatHoldsPartsOfTheMarkerIsPassedWhole) {
  Conversation talk = local_conversation();
  const ShellResult result = step(talk, "printf 'mlw-frame-0123 mlw-frame-\\001\\000end'");
  EXPECT_EQ(result.output, std::string("mlw-frame-0123 mlw-frame-\001\000end", 30));
}

TEST(Conversation, AShellThatEndsIsAnErrorAndTheConversationIsOver) {
  const std::string marker = "mlw-frame-0123456789abcdef";
  auto pipe = std::make_unique<LocalPipe>(marker);
  LocalPipe& ends = *pipe;
  Conversation talk(std::move(pipe), "here", marker);
  EXPECT_EQ(step(talk, "echo fine").exit_code, 0);
  ends.end_input();  // the shell reads the end of its input and exits
  EXPECT_THROW(step(talk, "echo never"), Error);
  EXPECT_FALSE(talk.usable());
}

TEST(Conversation, ALoginShellThatEndsFirstIsTheStepsFailureWithWhatItSaid) {
  Conversation talk = local_conversation("echo 'account expired' >&2; exit 1; ");
  const ShellResult result = step(talk, "echo never");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.errors.find("account expired"), std::string::npos);
  EXPECT_EQ(result.output, "");
}

/// A shell started ahead in `home` (HOME for it), once it noted its start (a file in ~/.mlw).
Conversation ahead_conversation(const fs::path& home) {
  const std::string marker = "mlw-frame-0123456789abcdef";
  Conversation talk(
      std::make_unique<LocalPipe>(marker, "HOME=" + home.string() + "; export HOME; ", true),
      "here", marker, true);
  for (int i = 0; i < 200 && fs::exists(home / ".mlw") && fs::is_empty(home / ".mlw"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return talk;
}

TEST(Conversation, AShellStartedAheadRunsTheStepWhenNoLoginFileChanged) {
  test::TempDir home("ahead");
  fs::create_directory(home.path() / ".mlw");
  atomic_write_file(home.path() / ".bashrc", "export A=1\n");
  fs::last_write_time(home.path() / ".bashrc",
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  // The home folder itself is watched too, and was changed just now (.bashrc made in it): a
  // file's time is the kernel's coarse clock (a few ms a tick), so the shell's note could carry
  // the same time and, rightly, count it as changed. An hour back, as a real home's.
  fs::last_write_time(home.path(), fs::file_time_type::clock::now() - std::chrono::hours(1));
  Conversation talk = ahead_conversation(home.path());
  const ShellResult first = step(talk, "cat; echo done", "input\n", true);
  EXPECT_FALSE(talk.stale());
  EXPECT_EQ(first.output, "input\ndone\n");
  EXPECT_EQ(step(talk, "echo again").output, "again\n");
}

TEST(Conversation, AShellStartedAheadOfAChangedBashrcRunsNothingAndHandsBackTheInputSent) {
  test::TempDir home("ahead");
  fs::create_directory(home.path() / ".mlw");
  atomic_write_file(home.path() / ".bashrc", "\n");
  Conversation talk = ahead_conversation(home.path());
  ASSERT_FALSE(fs::is_empty(home.path() / ".mlw"));  // it noted its start
  std::ofstream(home.path() / ".bashrc") << "export PATH=/opt/cuda/bin:$PATH\n";  // in place
  // Two chunks of input: the first goes with the script (a round trip less), the second waits
  // for the shell's marker, which a stale shell never prints.
  const std::string first(1 << 20, 'a');
  std::size_t asked = 0;
  ShellStreams streams;
  streams.read_input = [&](char* buffer, std::size_t size) {
    ++asked;
    const std::size_t n = std::min(size, first.size());
    if (asked == 1) std::copy_n(first.data(), n, buffer);
    return asked == 1 ? n : std::size_t{0};
  };
  bool stopped = false;
  const ShellResult result = talk.step("cat > ran", streams, stopped);
  EXPECT_TRUE(talk.stale());
  EXPECT_FALSE(talk.usable());
  EXPECT_EQ(result.exit_code, 86);
  EXPECT_EQ(asked, 1U);                  // one chunk, not the input's end
  EXPECT_EQ(talk.taken_input(), first);  // handed back for the new shell, with the rest after
  EXPECT_FALSE(fs::exists(home.path() / "ran"));
  EXPECT_TRUE(fs::is_empty(home.path() / ".mlw"));  // its note is removed
}

/// A shell started ahead that ends stale (exit 86) before its marker, having taken all it was
/// sent (a pipe with room for it all): what it got is what the Conversation chose to send.
class StalePipe : public ShellPipe {
 public:
  explicit StalePipe(std::string& sent) : m_sent(sent) {}
  std::size_t write(std::string_view data) override {
    m_sent.append(data);
    return data.size();
  }
  std::size_t read(int, char*, std::size_t) override { return 0; }
  bool ended() override { return ++m_polls > 3; }
  void wait(int) override {}
  int waits() const override { return 0; }
  int exit_status() override { return 86; }

 private:
  std::string& m_sent;
  int m_polls = 0;
};

TEST(Conversation, AShellStartedAheadIsSentOneChunkOfInputBeforeItsMarkerAndNoMore) {
  std::string sent;
  Conversation talk(std::make_unique<StalePipe>(sent), "here", "mlw-frame-0123456789abcdef", true);
  const std::string chunk(1 << 20, 'a');
  const ShellResult result = step(talk, "cat", chunk + "rest", true);
  EXPECT_TRUE(talk.stale());
  EXPECT_EQ(result.exit_code, 86);
  EXPECT_EQ(sent, "3 i\ncat1048576\n" + chunk);  // not the rest, nor the input's end
  EXPECT_EQ(talk.taken_input(), chunk);
}

TEST(Conversation, AShellStartedAheadGetsTheFirstChunkWithTheScriptAndTheRestAfterItsMarker) {
  test::TempDir home("ahead");
  fs::create_directory(home.path() / ".mlw");
  // An hour back, as a real home's (see AShellStartedAheadRunsTheStepWhenNoLoginFileChanged).
  fs::last_write_time(home.path(), fs::file_time_type::clock::now() - std::chrono::hours(1));
  Conversation talk = ahead_conversation(home.path());
  // A whole chunk (1 MiB) and a tail: nothing lost or doubled around the marker.
  const std::string input = std::string(1 << 20, 'x') + "tail\n";
  const ShellResult result = step(talk, "wc -c; echo done", input, true);
  EXPECT_FALSE(talk.stale());
  EXPECT_EQ(talk.taken_input(), "");
  EXPECT_EQ(trim(result.output), "1048581\ndone");
}

TEST(Conversation, AShellStartedAheadOfAFolderMadeInTheHomeFolderIsStale) {
  // A ~/.bashrc that puts ~/evil first on PATH when it exists (test_hostile's).
  test::TempDir home("ahead");
  fs::create_directory(home.path() / ".mlw");
  Conversation talk = ahead_conversation(home.path());
  ASSERT_FALSE(fs::is_empty(home.path() / ".mlw"));
  fs::create_directory(home.path() / "evil");
  step(talk, "echo never");
  EXPECT_TRUE(talk.stale());
}

TEST(Conversation, AShellStartedAheadWithNowhereToNoteItsStartIsStale) {
  test::TempDir home("ahead");  // no ~/.mlw: never used for runs
  Conversation talk = ahead_conversation(home.path());
  step(talk, "echo never");
  EXPECT_TRUE(talk.stale());
}

}  // namespace
}  // namespace mlw

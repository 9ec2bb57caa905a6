// Kept connections: where their socket may live, and the client's side of the protocol against
// a stand-in for the kept process.

#include "../../../src/remote/kept.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

#include "temp_dir.hpp"

namespace mlw {
namespace {

namespace fs = std::filesystem;

std::string frame(char type, const std::string& data) {
  std::string out(5, '\0');
  out[0] = type;
  for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<char>((data.size() >> (24 - 8 * i)) & 0xff);
  return out + data;
}

/// The next client on `listen_fd` (waiting up to 2 s); -1 when none came.
int accept_client(int listen_fd) {
  int fd = -1;
  for (int i = 0; i < 200 && fd < 0; ++i) {
    fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fd;
}

/// Accepts one client on `listen_fd`, reads its request, answers `reply`, then echoes stdout.
void stand_in(int listen_fd, std::string reply, std::string* asked) {
  const int fd = accept_client(listen_fd);
  if (fd < 0) return;
  char buffer[64];
  const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
  if (n > 0) asked->assign(buffer, static_cast<std::size_t>(n));
  ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
  while (::recv(fd, buffer, sizeof buffer, 0) > 0) {
  }  // as the kept process does, until the client goes
  ::close(fd);
}

TEST(Kept, TheFolderIsMadeForTheUserAloneAndAnOpenOneIsRefused) {
  test::TempDir dir("mlw-kept");
  const fs::path folder = dir.path() / "config" / "connections";
  const auto socket = kept_socket(folder, "user@host:22");
  ASSERT_TRUE(socket);
  EXPECT_EQ(socket->parent_path(), folder);
  EXPECT_EQ(socket->extension(), ".sock");
  struct stat info {};
  ASSERT_EQ(::stat(folder.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  EXPECT_EQ(kept_socket(folder, "user@host:22"), socket);  // the same login, the same socket
  EXPECT_NE(kept_socket(folder, "other@host:22"), socket);
  ::chmod(folder.c_str(), 0755);
  EXPECT_FALSE(kept_socket(folder, "user@host:22"));  // others may enter it
  ::chmod(folder.c_str(), 0700);
  const fs::path link = dir.path() / "link";
  fs::create_directory_symlink(folder, link);
  EXPECT_FALSE(kept_socket(link, "user@host:22"));                     // not a real folder
  EXPECT_FALSE(kept_socket(dir.path() / std::string(120, 'x'), "k"));  // too long a path
}

TEST(Kept, AClientGetsTheConversationsMarkerOrLogsInItself) {
  test::TempDir dir("mlw-kept");
  const auto socket = kept_socket(dir.path() / "c", "k");
  ASSERT_TRUE(socket);
  std::string marker = "unset";
  bool ahead = true;
  EXPECT_EQ(kept_open(*socket, 1000, false, marker, ahead), nullptr);  // nobody kept a connection
  EXPECT_EQ(marker, "unset");

  int listen_fd = kept_listen(*socket);
  ASSERT_GE(listen_fd, 0);
  std::string asked;
  std::thread ready(stand_in, listen_fd, frame('r', "mlw-frame-00") + frame('o', "hi"), &asked);
  auto pipe = kept_open(*socket, 2000, false, marker, ahead);
  if (!pipe) ready.join();
  ASSERT_NE(pipe, nullptr);
  EXPECT_EQ(marker, "mlw-frame-00");
  EXPECT_FALSE(ahead);
  char buffer[8] = {};
  for (int i = 0; i < 100 && !pipe->read(0, buffer, sizeof buffer); ++i) pipe->wait(10);
  EXPECT_STREQ(buffer, "hi");
  pipe.reset();
  ready.join();
  EXPECT_EQ(asked, "conv\n");

  // A shell started ahead says so ('a'); a client that wants one started now says "cnow".
  std::thread early(stand_in, listen_fd, frame('a', "mlw-frame-01"), &asked);
  pipe = kept_open(*socket, 2000, true, marker, ahead);
  if (!pipe) early.join();
  ASSERT_NE(pipe, nullptr);
  EXPECT_EQ(marker, "mlw-frame-01");
  EXPECT_TRUE(ahead);
  pipe.reset();
  early.join();
  EXPECT_EQ(asked, "cnow\n");

  std::thread busy(stand_in, listen_fd, frame('f', "busy with another command"), &asked);
  EXPECT_EQ(kept_open(*socket, 2000, false, marker, ahead),
            nullptr);  // refused: the caller logs in
  busy.join();
  EXPECT_EQ(kept_listen(*socket), -1);  // one answers there already
  ::close(listen_fd);
  EXPECT_EQ(kept_open(*socket, 2000, false, marker, ahead),
            nullptr);                 // nobody listens: left over
  EXPECT_FALSE(fs::exists(*socket));  // and removed
}

TEST(Kept, AShellThatEndedWhileTheStepWasSentIsAnEndNotALostConnection) {
  // A shell started ahead that found a login file changed exits 86 at once, and the kept
  // process closes the channel: the client, still sending the step, must read that end (and
  // ask for a shell started now), not fail with "Broken pipe" (seen once in CI).
  test::TempDir dir("mlw-kept");
  const auto socket = kept_socket(dir.path() / "c", "k");
  ASSERT_TRUE(socket);
  const int listen_fd = kept_listen(*socket);
  ASSERT_GE(listen_fd, 0);
  // The kept process: the shell started ahead; it reads the step's first bytes, ends (86) and
  // the channel closes while the client is still sending.
  std::thread stale([listen_fd] {
    const int fd = accept_client(listen_fd);
    if (fd < 0) return;
    char buffer[64];
    ::recv(fd, buffer, sizeof buffer, 0);
    const std::string ready = frame('a', "mlw-frame-02");
    ::send(fd, ready.data(), ready.size(), MSG_NOSIGNAL);
    ::recv(fd, buffer, sizeof buffer, 0);  // the step has begun to arrive
    const std::string end = frame('x', "86");
    ::send(fd, end.data(), end.size(), MSG_NOSIGNAL);
    ::close(fd);
  });
  std::string marker;
  bool ahead = false;
  auto pipe = kept_open(*socket, 2000, false, marker, ahead);
  ASSERT_NE(pipe, nullptr);
  const std::string step(1 << 20, 's');
  std::size_t sent = 0;
  for (int i = 0; i < 100 && sent < step.size(); ++i) {
    EXPECT_NO_THROW(sent += pipe->write(std::string_view(step).substr(sent)));
    pipe->wait(10);
  }
  for (int i = 0; i < 100 && !pipe->ended(); ++i) pipe->wait(10);
  EXPECT_TRUE(pipe->ended());
  EXPECT_EQ(pipe->exit_status(), 86);
  stale.join();
  ::close(listen_fd);
}

}  // namespace
}  // namespace mlw

#include "mlw/util/fs.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

bool write_fully(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::syncfs(fd) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    throw Error(fmt::format("cannot sync {}: {}", folder.string(), std::strerror(error)));
  }
  ::close(fd);
}

void atomic_write_file(const fs::path& path, std::string_view content, mode_t mode, bool durable) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::random_device random;
  const fs::path temp =
      folder / fmt::format(".{}.tmp{}-{}", path.filename().string(), ::getpid(), random());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw Error("cannot write " + path.string() + ": " + errno_text(errno));
  try {
    if (::fchmod(fd, mode) != 0) throw Error("cannot set mode of " + temp.string());
    if (!write_fully(fd, content)) {
      throw Error("cannot write " + path.string() + ": " + errno_text(errno));
    }
    if (durable && ::fsync(fd) != 0)
      throw Error("cannot write " + path.string() + ": " + errno_text(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw Error("cannot write " + path.string() + ": " + errno_text(err));
  }
}

std::string read_file(const fs::path& path) {
  auto content = read_file_if_exists(path);
  if (!content) throw Error("cannot read " + path.string() + ": " + errno_text(errno));
  return *content;
}

std::optional<std::string> read_file_if_exists(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Error("cannot read " + path.string() + ": " + errno_text(errno));
  }
  // Read in place into a string of the file's size (a regular file's; one more byte to see its
  // end), grown only where the file grew meanwhile or has no size (a pipe, /proc).
  struct stat info {};
  std::string out;
  std::size_t have = 0;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
    out.resize(static_cast<std::size_t>(info.st_size) + 1);
  }
  while (true) {
    if (have == out.size()) out.resize(std::max<std::size_t>(65536, out.size() * 2));
    const ssize_t n = ::read(fd, out.data() + have, out.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error("cannot read " + path.string() + ": " + errno_text(err));
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(have);
  return out;
}

void make_directories(const fs::path& path, mode_t mode) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return;
  if (path.has_parent_path() && path.parent_path() != path) {
    make_directories(path.parent_path(), mode);
  }
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    throw Error("cannot create folder " + path.string() + ": " + errno_text(errno));
  }
}

fs::path home_directory() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  if (const passwd* entry = ::getpwuid(::getuid()); entry && entry->pw_dir) return entry->pw_dir;
  throw Error("cannot find the home folder: HOME is not set");
}

fs::path user_config_directory() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return fs::path(xdg) / "mlw";
  return home_directory() / ".config" / "mlw";
}

fs::path expand_user(const std::string& path) {
  if (path == "~") return home_directory();
  if (starts_with(path, "~/")) return home_directory() / path.substr(2);
  return path;
}

std::optional<fs::path> find_executable(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return fs::path(name);
    return std::nullopt;
  }
  const char* path_env = std::getenv("PATH");
  for (const auto& folder : split(path_env ? path_env : "/usr/local/bin:/usr/bin:/bin", ':')) {
    const fs::path candidate = fs::path(folder.empty() ? "." : folder) / name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

int open_regular_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace mlw

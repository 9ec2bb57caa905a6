#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace mlw {

namespace fs = std::filesystem;

/// Writes `content` to `path` atomically: a temporary file in the same folder, fsync (unless
/// `durable` is false: the content may then be lost, never torn, on power loss), rename.
/// The file gets `mode`; a failure leaves any previous file untouched and throws mlw::Error.
void atomic_write_file(const fs::path& path, std::string_view content, mode_t mode = 0644,
                       bool durable = true);

/// Makes every write so far to the file system that holds `folder` durable (syncfs): one call
/// after many non-durable atomic writes. Throws mlw::Error naming the folder when it fails.
void sync_folder(const fs::path& folder);

/// Writes all of `data` to `fd`, again after EINTR and short writes; false (errno set) when the
/// descriptor refuses. Allocates nothing: safe in a forked child before exec.
bool write_fully(int fd, std::string_view data);

/// The whole file as a string; throws mlw::Error naming the path when it cannot be read.
std::string read_file(const fs::path& path);

/// The whole file, or nullopt when it does not exist.
std::optional<std::string> read_file_if_exists(const fs::path& path);

/// Opens `path` for reading only when it is a regular file, without ever blocking (a FIFO or a
/// device in its place is not waited on); -1 with errno set (EINVAL for a file that is not
/// regular) otherwise. The caller closes the descriptor.
int open_regular_file(const fs::path& path);

/// Creates `path` and its parents; throws mlw::Error naming the path on failure.
void make_directories(const fs::path& path, mode_t mode = 0755);

/// The user's home folder ($HOME, else the password database).
fs::path home_directory();

/// mlw's folder in the user's configuration folder: $XDG_CONFIG_HOME/mlw or ~/.config/mlw.
fs::path user_config_directory();

/// `~/x` expanded to the home folder; other paths unchanged.
fs::path expand_user(const std::string& path);

/// The absolute path of an executable found on $PATH (or `name` itself when it has a slash).
std::optional<fs::path> find_executable(const std::string& name);

}  // namespace mlw

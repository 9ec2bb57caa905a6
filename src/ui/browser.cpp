// The dashboard's URL and `--open`: the page in a private folder that sends a browser on to the
// URL (the token on no command line), and xdg-open started without waiting for it.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "dashboard.hpp"
#include "mlw/ui/server.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"

namespace mlw::ui {

namespace fs = std::filesystem;

std::string dashboard_url(const std::string& host, int port, const std::string& base,
                          const std::string& token) {
  std::string shown = is_wildcard(host) ? host_name() : host;
  if (shown.find(':') != std::string::npos) shown = "[" + shown + "]";
  return fmt::format("http://{}:{}{}?token={}", shown, port, base, token);
}

RedirectFile::RedirectFile(const fs::path& folder, int port, const std::string& url) {
  make_directories(folder, 0700);
  struct stat info {};
  if (::lstat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() ||
      (info.st_mode & 077) != 0) {
    throw Error(fmt::format("{} must be a folder of yours that only you can open (mode 0700)",
                            folder.string()));
  }
  m_path = folder / fmt::format("open-{}.html", port);
  const std::string escaped = html_escape(url);
  atomic_write_file(
      m_path,
      fmt::format("<!doctype html>\n<meta http-equiv=\"refresh\" content=\"0;url={}\">"
                  "\n<a href=\"{}\">Open the mlw dashboard</a>\n",
                  escaped, escaped),
      0600);
}

RedirectFile::~RedirectFile() {
  std::error_code ignored;
  fs::remove(m_path, ignored);
}

void open_in_browser(const std::string& url) {
  pid_t pid = -1;
  try {
    SpawnOptions streams;
    streams.stderr_fd = STDERR_FILENO;
    pid = spawn({{"xdg-open", url}, {}, {}}, streams);
  } catch (const Error& e) {
    spdlog::warn("could not open a browser ({}); open the URL above yourself", e.what());
    return;
  }
  std::thread([pid] {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return;
    const int code = exit_code_from_wait_status(status);
    if (code == 0) return;
    spdlog::warn("could not open a browser ({}); open the URL above yourself",
                 code == 127 ? std::string("xdg-open was not found")
                             : fmt::format("xdg-open exited {}", code));
  }).detach();
}

}  // namespace mlw::ui

// `mlw notebook kernels` and `mlw notebook start` (docs/notebooks.md): Jupyter's kernel specs
// for the project's run configurations, and Jupyter itself on 127.0.0.1 with a token.

#include "mlw/api/notebook.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/random.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

namespace {

/// What Jupyter accepts in a kernel name (jupyter_client: [a-z0-9._-]); anything else is '-'.
std::string kernel_word(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool kept = (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '.' || c == '_';
    if (u >= 'A' && u <= 'Z') {
      out += static_cast<char>(u - 'A' + 'a');
    } else {
      out += kept ? c : '-';
    }
  }
  return out;
}

/// This mlw's own path (Jupyter runs it for each kernel).
std::string self_path() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this mlw's own path (/proc/self/exe): " + ec.message());
  return self.string();
}

/// The user's Jupyter data folder ($JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
/// ~/.local/share/jupyter), as jupyter_core finds it on Linux.
fs::path user_jupyter_dir() {
  if (const char* dir = std::getenv("JUPYTER_DATA_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "jupyter";
  }
  return home_directory() / ".local" / "share" / "jupyter";
}

/// Writes a spec per run configuration under `root`/kernels; removes mlw's specs of this
/// project that no configuration has now.
std::vector<KernelSpec> write_specs(const Project& project, const fs::path& root) {
  const std::string prefix = "mlw-" + kernel_word(project.name) + "-";
  const std::string self = self_path();
  std::vector<KernelSpec> specs;
  std::set<std::string> names;
  for (const auto& config : project.run_config_names()) {
    KernelSpec spec;
    spec.name = prefix + kernel_word(config);
    spec.display_name = project.name + " " + config;
    spec.run_config = config;
    spec.folder = root / "kernels" / spec.name;
    nlohmann::ordered_json json = {
        {"argv",
         {self, "--project", project.root.string(), "notebook", "kernel", "-c", config, "-f",
          "{connection_file}"}},
        {"display_name", spec.display_name},
        {"language", "python"},
        // Jupyter's interrupt is a message the kernel answers itself: a signal to mlw would
        // not reach a kernel on another machine.
        {"interrupt_mode", "message"},
        {"metadata", {{"mlw", {{"project", project.root.string()}, {"run_config", config}}}}}};
    fs::create_directories(spec.folder);
    atomic_write_file(spec.folder / "kernel.json", json.dump(1) + "\n");
    names.insert(spec.name);
    specs.push_back(std::move(spec));
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / "kernels", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix) && !names.contains(name)) fs::remove_all(entry.path(), ec);
  }
  return specs;
}

/// Whether 127.0.0.1:`port` can be listened on now.
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return free;
}

}  // namespace

std::vector<KernelSpec> notebook_kernels(Context& ctx, bool user) {
  const Project& project = ctx.project();
  const fs::path root = user ? user_jupyter_dir() : project.state_dir() / "jupyter";
  auto specs = write_specs(project, root);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& spec : specs) {
    rows.push_back({{"name", spec.name},
                    {"display_name", spec.display_name},
                    {"run_config", spec.run_config},
                    {"folder", spec.folder.string()}});
  }
  ctx.output().print_list(
      rows, {{"display_name", "Kernel"}, {"run_config", "Configuration"}, {"folder", "Spec"}});
  if (!user && !ctx.quiet && !ctx.output().structured()) {
    *ctx.err << fmt::format(
        "mlw: info: `mlw notebook start` offers these; for JupyterLab or VS Code: mlw notebook "
        "kernels --user\n");
  }
  return specs;
}

int notebook_start(Context& ctx, const NotebookStartRequest& request) {
  const Project& project = ctx.project();
  const auto found = find_executable("jupyter-notebook");
  if (!found) {
    throw Error(
        "Jupyter is not installed here (no jupyter-notebook on PATH): install it (Debian: sudo "
        "apt install jupyter-notebook python3-ipykernel), then run mlw notebook start again");
  }
  int port = request.port.value_or(0);
  if (request.port && (port < 1 || port > 65535)) throw UsageError("--port must be 1-65535");
  if (!request.port) {
    for (int candidate = 8888; candidate < 8898 && port == 0; ++candidate) {
      if (port_free(candidate)) port = candidate;
    }
    if (port == 0) throw Error("ports 8888-8897 are all in use here: choose one with --port P");
  } else if (!port_free(port)) {
    throw Error(fmt::format("port {} is in use here: choose another with --port P", port));
  }
  const std::string jupyter = found->string();
  const fs::path root = project.state_dir() / "jupyter";
  const auto specs = write_specs(project, root);
  const std::string token = random_hex(24, "Jupyter's token");
  // Jupyter reads the token from its environment (never a command line other users can read);
  // each kernel it starts inherits it with the port, to ask Jupyter which notebook it serves.
  std::string path = root.string();
  if (const char* given = std::getenv("JUPYTER_PATH"); given != nullptr && *given != '\0') {
    path += ":" + std::string(given);
  }
  ::setenv("JUPYTER_PATH", path.c_str(), 1);
  ::setenv("JUPYTER_TOKEN", token.c_str(), 1);
  ::setenv("MLW_NOTEBOOK_PORT", std::to_string(port).c_str(), 1);
  std::vector<std::string> words = {jupyter, "--ip=127.0.0.1", fmt::format("--port={}", port),
                                    "--NotebookApp.port_retries=0",
                                    "--notebook-dir=" + project.root.string()};
  if (request.no_browser) words.emplace_back("--no-browser");
  if (::geteuid() == 0) {
    // Jupyter refuses root unless told; said, not silent.
    spdlog::warn("running as root: Jupyter is started with --allow-root");
    words.emplace_back("--allow-root");
  }
  *ctx.err << fmt::format(
      "mlw: info: Jupyter in {} with {} kernel{} of mlw's ({}); Ctrl-C stops it\n",
      project.root.string(), specs.size(), specs.size() == 1 ? "" : "s",
      specs.empty() ? "no run configuration" : specs.front().display_name + ", …");
  *ctx.out << fmt::format("http://127.0.0.1:{}/?token={}\n", port, token) << std::flush;
  ctx.err->flush();
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(jupyter.c_str(), argv.data());
  throw Error(fmt::format("cannot start {}: {}", jupyter, std::strerror(errno)));
}

}  // namespace mlw::api

// `mlw experiment forward`: a running run's ports on 127.0.0.1 here, until the run ends or
// Ctrl-C (docs/cli.md, issue 48). Each forwarding process says what it serves in the run's
// folder (forwards/PID.json), for the dashboard's run page.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mlw/api/experiment.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "run_start.hpp"

namespace fs = std::filesystem;

namespace mlw::api {

namespace {

/// A port number from `text`; `lowest` 0 lets the system choose. UsageError otherwise.
int parse_port(std::string_view text, int lowest, const std::string& whole) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lowest || value > 65535) {
    throw UsageError(fmt::format(
        "experiment forward: {} is not PORT[:LOCAL] (ports 1-65535; LOCAL 0: any free port)",
        whole));
  }
  return value;
}

/// Listens on 127.0.0.1:`port` (0: a free port); the port it got through `bound`.
int listen_here(int port, int run_port, int& bound) {
  const int fd = bind_loopback(port, bound, true);
  if (fd >= 0) return fd;
  if (errno == EADDRINUSE) {
    throw Error(fmt::format(
        "port {} is already in use on this machine: forward to another one, e.g. {}:{} (or "
        "{}:0 for any free port)",
        port, run_port, port == run_port ? port + 10000 : run_port, run_port));
  }
  throw Error(fmt::format("cannot listen on 127.0.0.1:{}: {}", port, errno_text(errno)));
}

/// Closes the listening sockets and removes the process's forwards file, however forward ends.
struct Served {
  const std::vector<ForwardPort>& ports;
  fs::path file;
  ~Served() {
    for (const auto& port : ports) ::close(port.listen_fd);
    std::error_code ec;
    if (!file.empty()) fs::remove(file, ec);
  }
};

}  // namespace

int bind_loopback(int port, int& bound, bool listen) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      (listen && ::listen(fd, k_listen_backlog) != 0)) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  // A port only held: reuse off again, or a program that binds with SO_REUSEADDR (most servers)
  // would share it, Linux letting sockets that both set it share a port none listens on.
  const int off = 0;
  if (!listen) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &off, sizeof(off));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  bound = ntohs(address.sin_port);
  return fd;
}

std::vector<PortPair> parse_ports(const std::vector<std::string>& texts) {
  std::vector<PortPair> pairs;
  std::set<int> runs, locals;
  for (const auto& text : texts) {
    const auto colon = text.find(':');
    PortPair pair;
    pair.run = parse_port(std::string_view(text).substr(0, colon), 1, text);
    pair.local = colon == std::string::npos
                     ? pair.run
                     : parse_port(std::string_view(text).substr(colon + 1), 0, text);
    if (!runs.insert(pair.run).second || (pair.local != 0 && !locals.insert(pair.local).second)) {
      throw UsageError(fmt::format("experiment forward: {} is named twice", text));
    }
    pairs.push_back(pair);
  }
  return pairs;
}

nlohmann::json live_forwards(const fs::path& run_dir) {
  nlohmann::json all = nlohmann::json::array();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir / "forwards", ec)) {
    int pid = 0;
    const std::string name = entry.path().stem().string();
    std::from_chars(name.data(), name.data() + name.size(), pid);
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) continue;  // its process is gone
    const auto served =
        nlohmann::json::parse(read_file_if_exists(entry.path()).value_or("[]"), nullptr, false);
    if (!served.is_array()) continue;
    // Rebuilt from the numbers: a file in the project's folder is not trusted to name a URL.
    for (const auto& one : served) {
      if (!one.is_object() || !one.value("port", nlohmann::json()).is_number_integer() ||
          !one.value("local", nlohmann::json()).is_number_integer()) {
        continue;
      }
      const int port = one["port"].get<int>();
      const int local = one["local"].get<int>();
      if (port < 1 || port > 65535 || local < 1 || local > 65535) continue;
      all.push_back(
          {{"port", port}, {"local", local}, {"url", fmt::format("http://127.0.0.1:{}/", local)}});
    }
  }
  return all;
}

Forwards listen_forwards(const std::vector<PortPair>& pairs, bool here) {
  Forwards forwards;
  for (const auto& pair : pairs) {
    int local = pair.run;
    if (!here || pair.local != pair.run) {
      ForwardPort port;
      port.to.port = pair.run;
      port.listen_fd = listen_here(pair.local, pair.run, local);
      forwards.ports.push_back(port);
    }
    forwards.served.push_back({{"port", pair.run},
                               {"local", local},
                               {"url", fmt::format("http://127.0.0.1:{}/", local)}});
  }
  return forwards;
}

int serve_forwards(Context& ctx, RunningRun run, Forwards& forwards,
                   const std::function<bool()>& also, bool announce) {
  Served cleanup{forwards.ports, {}};
  const std::string run_id = run.record.run_id;
  ForwardRequest request;
  request.record = std::move(run.record);
  request.compute = std::move(run.compute);
  request.run_dir = std::move(run.run_dir);
  request.ports = forwards.ports;
  if (announce) {
    for (const auto& one : forwards.served) {
      const bool own =
          one["port"] == one["local"] && forwards.ports.size() < forwards.served.size();
      std::cout << one["url"].get<std::string>() << "  "
                << fmt::format("port {} of run {} on {}{}", one["port"].get<int>(), run_id,
                               request.record.target, own ? " (this machine's own)" : "")
                << "\n";
    }
    std::cout.flush();
    cleanup.file = request.run_dir / "forwards" / fmt::format("{}.json", ::getpid());
    fs::create_directories(cleanup.file.parent_path());
    atomic_write_file(cleanup.file, forwards.served.dump() + "\n");
    spdlog::info("forwarding until run {} ends (Ctrl-C stops it)", run_id);
  }

  InterruptWatch interrupt;
  HistoryStore store(ctx.project().state_dir());
  std::string ended;
  request.keep_going = [&] {
    if (interrupt.fired() || (also && !also())) return false;
    const RunRecord now = store.load(run_id);
    if (now.status == status::k_running) return true;
    ended = now.status;
    return false;
  };
  if (request.ports.empty()) {
    while (request.keep_going()) ::usleep(500000);
  } else {
    ctx.executor(request.record.target_type)->forward(ctx, request);
  }
  if (!ended.empty()) spdlog::info("run {} is {}: forwarding stopped", run_id, ended);
  return 0;
}

int forward(Context& ctx, const std::string& run_id, const std::vector<PortPair>& pairs) {
  RunningRun run = load_running(ctx, run_id, "forward");
  Forwards forwards = listen_forwards(pairs, run.record.target_type == "local");
  return serve_forwards(ctx, std::move(run), forwards, {});
}

ForwarderGuard::~ForwarderGuard() {
  stop();
}

void ForwarderGuard::stop() {
  if (pid <= 0) return;
  ::kill(pid, SIGINT);  // it stops at its next look (a second at most) and removes its file
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid = 0;
}

void ForwarderGuard::start(Context& ctx, const std::string& run_id, Forwards& forwards) {
  const pid_t parent = ::getpid();
  pid = ::fork();
  if (pid < 0) throw Error("--forward: cannot start: " + errno_text(errno));
  if (pid > 0) {
    for (const auto& port : forwards.ports) ::close(port.listen_fd);
    return;
  }
  // The child: waits for the run's script to start, then serves the ports while the run runs
  // and its submit follows it. _exit: the parent's objects (its SSH sessions) are its own.
  int code = 0;
  try {
    HistoryStore store(ctx.project().state_dir());
    while (true) {
      const RunRecord record = store.load(run_id);
      if (record.status == status::k_running) break;
      if (status::is_final(record.status) || record.status == status::k_lost ||
          ::getppid() != parent) {
        ::_exit(0);
      }
      ::usleep(300000);
    }
    code = serve_forwards(
        ctx, load_running(ctx, run_id, "forward"), forwards,
        [parent] { return ::getppid() == parent; }, announce);
  } catch (const std::exception& e) {
    spdlog::warn("--forward: {}", e.what());
    code = 1;
  }
  std::cout.flush();
  ::_exit(code);
}

}  // namespace mlw::api

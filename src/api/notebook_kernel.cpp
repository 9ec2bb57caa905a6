// `mlw notebook kernel` (docs/notebooks.md): what Jupyter runs for a kernel of mlw's. The kernel
// (python -m mlw.kernel, python/mlw/kernel.py) runs as a run of the configuration's target; this
// process follows the run's output, makes each cell it executes a run of the history, carries
// Jupyter's connections to a kernel on another machine (its five ports, through the target's
// forward: the SSH connection, a relay into its container), and cancels the run when Jupyter
// stops this process.

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "mlw/api/experiment.hpp"
#include "mlw/api/notebook.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "notebook_cells.hpp"
#include "notebook_session.hpp"
#include "run_start.hpp"
#include "submit_output.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

namespace {

/// The longest line of the kernel's output taken (an event holds at most 1 MiB of metrics).
constexpr std::size_t k_line_limit = std::size_t{4} << 20;

/// Jupyter's five channels, as its connection file names their ports.
constexpr std::array<const char*, 5> k_channels = {"shell_port", "iopub_port", "stdin_port",
                                                   "control_port", "hb_port"};

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int signal) {
  g_stop_signal = signal;
}

/// The port `name` of `json` (a connection file or the kernel's ports event), 1-65535.
int port_in(const nlohmann::json& json, const char* name, const std::string& what) {
  const auto value = json.value(name, nlohmann::json());
  if (!value.is_number_integer() || value.get<int>() < 1 || value.get<int>() > 65535) {
    throw Error(fmt::format("{} has no port {} (1-65535)", what, name));
  }
  return value.get<int>();
}

/// Jupyter's connection file, as far as mlw needs it.
nlohmann::json read_connection(const fs::path& file) {
  std::ifstream in(file);
  auto connection = nlohmann::json::parse(in, nullptr, false);
  if (!in || !connection.is_object() || !connection.contains("shell_port")) {
    throw Error(fmt::format("{} is not a Jupyter connection file", file.string()));
  }
  return connection;
}

/// What a kernel on another machine needs of the connection file; Error where mlw cannot carry
/// it there.
void check_remote_connection(const nlohmann::json& connection, const fs::path& file) {
  const std::string transport = text_at(connection, "transport", "tcp");
  const std::string ip = text_at(connection, "ip", "127.0.0.1");
  if (transport != "tcp" || (ip != "127.0.0.1" && ip != "localhost")) {
    throw Error(fmt::format(
        "{}: a kernel on another machine is reached through 127.0.0.1 over TCP, not {}://{} "
        "(Jupyter's default)",
        file.string(), transport, ip));
  }
  const auto key = connection.value("key", nlohmann::json());
  const std::string scheme = text_at(connection, "signature_scheme", "hmac-sha256");
  if (!key.is_string() || key.get<std::string>().empty() || scheme.rfind("hmac-", 0) != 0) {
    throw Error(fmt::format(
        "{}: a kernel on another machine needs a key and an hmac signature scheme", file.string()));
  }
  for (const char* channel : k_channels) port_in(connection, channel, file.string());
}

/// Jupyter's connections to a kernel on another machine: its ports here, carried to the
/// kernel's by a forwarding child, and the lifeline this process holds to the kernel (its end
/// ends the kernel there).
class KernelLink {
 public:
  KernelLink() = default;
  KernelLink(const KernelLink&) = delete;
  KernelLink& operator=(const KernelLink&) = delete;
  ~KernelLink() {
    if (m_lifeline >= 0) ::close(m_lifeline);
    if (!m_opened) {
      for (const auto& port : m_held.ports) ::close(port.listen_fd);
    }
  }
  /// Holds the connection file's five ports (bound, not yet listened on) before the kernel's run
  /// starts: Jupyter chose them free a moment ago, and another program that took one since is
  /// said at once (no run, no queue wait), nor can one take it while the kernel starts. Until
  /// the forward listens, Jupyter's connections are refused (it tries again), not queued. A kernel
  /// Jupyter restarts gets the same ports, which the last one's forwarding child gives up within a
  /// second of its end: a port in use is asked again for up to 3 s.
  void hold(const nlohmann::json& connection, const fs::path& file) {
    for (const char* channel : k_channels) {
      const int port = port_in(connection, channel, file.string());
      int bound = 0;
      int fd = bind_loopback(port, bound, false);
      for (int i = 0; i < 30 && fd < 0 && errno == EADDRINUSE; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        fd = bind_loopback(port, bound, false);
      }
      if (fd < 0) {
        const int err = errno;
        throw Error(fmt::format(
            "{}: port {} (Jupyter's {}) {} on this machine: start the kernel again (Jupyter "
            "chooses free ports anew)",
            file.string(), port, channel,
            err == EADDRINUSE ? std::string("is already in use")
                              : "cannot be held: " + errno_text(err)));
      }
      ForwardPort held;
      held.listen_fd = fd;
      m_held.ports.push_back(held);
      m_held.served.push_back(
          {{"port", 0}, {"local", port}, {"url", fmt::format("http://127.0.0.1:{}/", port)}});
    }
  }
  /// Carries the ports held to `ports` (the kernel's event), and its lifeline.
  void open(Context& ctx, const std::string& run_id, const nlohmann::json& ports) {
    std::array<int, k_channels.size()> to{};
    for (std::size_t i = 0; i < k_channels.size(); ++i) {
      to.at(i) = port_in(ports, k_channels.at(i), "the kernel's ports");
    }
    Forwards life =
        listen_forwards({{port_in(ports, "lifeline_port", "the kernel's ports"), 0}}, false);
    Forwards forwards = std::move(m_held);
    m_held = {};
    for (std::size_t i = 0; i < to.size(); ++i) {
      forwards.ports.at(i).to.port = to.at(i);
      forwards.served.at(i)["port"] = to.at(i);
    }
    forwards.ports.push_back(life.ports.front());
    forwards.served.push_back(life.served.front());
    const int lifeline = forwards.served.back()["local"].get<int>();
    m_forwarder.announce = false;
    m_opened = true;
    m_forwarder.start(ctx, run_id, forwards);
    m_lifeline = connect_loopback(lifeline);
    if (m_lifeline < 0) {
      throw Error("cannot connect to the kernel's lifeline here: " + errno_text(errno));
    }
    spdlog::info("notebook kernel {}: Jupyter's ports are carried to the kernel", run_id);
  }
  /// The lifeline (-1 before open and once lost).
  int lifeline() const { return m_lifeline; }
  /// Whether open was called.
  bool opened() const { return m_opened; }
  /// Closes a lifeline that the kernel's end (or a lost connection) closed, and stops carrying
  /// the ports: nothing answers there now.
  void lose() {
    ::close(m_lifeline);
    m_lifeline = -1;
    m_forwarder.stop();
  }

 private:
  ForwarderGuard m_forwarder;
  Forwards m_held;  ///< the connection file's ports, held until open
  int m_lifeline = -1;
  bool m_opened = false;
};

/// Asks the kernel's run to stop (a connection already lost: it ends on its own).
void cancel_kernel(Context& ctx, Executor& executor, HistoryStore& store, const std::string& id) {
  request_cancel(store, id);
  try {
    executor.stop(ctx, store.load(id), false);
  } catch (const Error& e) {
    spdlog::warn("notebook kernel {}: {}", id, e.what());
  }
}

/// The run's exit code once its final record is written (it follows the end of its output).
int final_code(HistoryStore& store, const std::string& id) {
  for (int i = 0; i < 100; ++i) {
    const RunRecord now = store.load(id);
    if (status::is_final(now.status)) {
      spdlog::info("notebook kernel {} is {}", id, now.status);
      // Its environment could not be built, its target refused it: the reason, as submit says it.
      if (failed_before_its_script(now)) spdlog::error("{}", now.problems.front());
      return now.exit_code.value_or(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  spdlog::warn("notebook kernel {}: its output ended but its run has no final record", id);
  return 1;
}

/// What the kernel's run says and does while this process follows it.
struct KernelFollow {
  Context& ctx;
  Executor& executor;
  const RunPlan& plan;
  CellRecorder& cells;
  bool remote;
  KernelLink& link;
  bool past_queue = false;  ///< the run is no longer Preparing or Queued (said, if it waited)

  /// One line of the run's output: an event of the kernel's, or its log (to Jupyter's).
  void line(const std::string& text) {
    if (text.rfind(k_kernel_event_mark, 0) == 0) {
      const auto ports = cells.take(text.substr(k_kernel_event_mark.size()));
      if (ports && remote && !link.opened()) {
        link.open(ctx, plan.record.run_id, *ports);
      }
      return;
    }
    const std::size_t skip = !text.empty() && text[0] == k_live_note ? 1 : 0;
    *ctx.err << std::string_view(text).substr(skip) << "\n";
    ctx.err->flush();
  }

  /// Says once that the kernel waits in its target's queue (GPUs in use, a batch queue); reads
  /// the record only until the run is past the queue.
  void say_if_queued(HistoryStore& store) {
    if (past_queue || link.opened()) return;
    const std::string now = store.load(plan.record.run_id).status;
    if (now == status::k_preparing) return;
    past_queue = true;
    if (now != status::k_queued) return;
    spdlog::warn(
        "notebook kernel {} waits in {}'s queue (`mlw experiment queue -c {}` shows what it waits "
        "for): the notebook connects once it starts",
        plan.record.run_id, plan.target_name, plan.record.run_config);
  }
};

/// Follows the kernel's run until it ends (its code), a stop signal came (the run canceled) or
/// the lifeline to a kernel on another machine dropped.
int follow_kernel(KernelFollow& follow, const RunHandle& handle) {
  const std::string& id = follow.plan.record.run_id;
  HistoryStore store(follow.plan.history_dir);
  LineSplitter lines(k_line_limit);
  std::chrono::steady_clock::time_point stopping{};
  std::chrono::steady_clock::time_point lost{};  // when the lifeline closed
  char buffer[65536];
  while (true) {
    std::array<pollfd, 2> items{
        {{handle.output_fd, POLLIN, 0}, {follow.link.lifeline(), POLLIN, 0}}};
    const int ready = ::poll(items.data(), items.size(), 200);
    if (ready > 0 && items[0].revents != 0) {
      const ssize_t n = ::read(handle.output_fd, buffer, sizeof buffer);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;  // the run ended
      if (n > 0) {
        lines.feed(buffer, static_cast<std::size_t>(n),
                   [&](const std::string& text) { follow.line(text); });
      }
    }
    char byte = 0;
    if (ready > 0 && items[1].revents != 0 && ::read(follow.link.lifeline(), &byte, 1) <= 0) {
      follow.link.lose();  // the kernel ended (its output ends next), or the connection was lost
      lost = std::chrono::steady_clock::now();
    }
    if (lost != std::chrono::steady_clock::time_point{} &&
        std::chrono::steady_clock::now() > lost + std::chrono::seconds(5)) {
      spdlog::error(
          "notebook kernel {}: the connection to the kernel on {} was lost: the kernel ends "
          "there (within 20 s when {} cannot reach it)",
          id, follow.plan.target_name, follow.plan.target_name);
      cancel_kernel(follow.ctx, follow.executor, store, id);
      return 1;
    }
    follow.say_if_queued(store);
    if (g_stop_signal != 0 && stopping == std::chrono::steady_clock::time_point{}) {
      spdlog::info("notebook kernel {}: stopped by signal {}: canceling its run", id,
                   static_cast<int>(g_stop_signal));
      cancel_kernel(follow.ctx, follow.executor, store, id);
      stopping = std::chrono::steady_clock::now();
    }
    // Jupyter kills a kernel that has not ended 5 s after its SIGTERM: the run ends on its own.
    if (stopping != std::chrono::steady_clock::time_point{} &&
        std::chrono::steady_clock::now() > stopping + std::chrono::seconds(4)) {
      return 143;
    }
  }
  return final_code(store, id);
}

}  // namespace

int notebook_kernel(Context& ctx, const std::string& run_config, const fs::path& connection_file) {
  const nlohmann::json connection = read_connection(connection_file);
  SubmitRequest request;
  request.run_config = run_config;
  request.python_module = k_kernel_module;
  request.arguments = {fs::absolute(connection_file).string(), std::to_string(::getpid())};
  std::unique_ptr<Executor> executor;
  RunPlan plan = plan_run(ctx, request, executor);
  // A kernel on this machine binds the connection file's ports itself; elsewhere it binds its
  // own, with Jupyter's key from the run's variables, and this process carries the ports.
  const bool remote = plan.compute.type != "local";
  KernelLink link;
  if (remote) {
    check_remote_connection(connection, connection_file);
    link.hold(connection, connection_file);
    plan.arguments = {request.python_module,
                      "remote:" + text_at(connection, "signature_scheme", "hmac-sha256")};
    plan.extra_env[k_kernel_key_variable] = connection["key"].get<std::string>();
  }
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  for (const int signal : {SIGTERM, SIGHUP, SIGINT}) ::sigaction(signal, &action, nullptr);
  plan.detached = false;
  plan.ends_with_pid = ::getpid();  // killed (Jupyter's SIGKILL), its run is canceled still
  const RunHandle handle = start_run(ctx, plan, *executor);
  HistoryStore store(plan.history_dir);
  CellRecorder cells(store, store.load(plan.record.run_id), connection_file);
  KernelFollow follow{ctx, *executor, plan, cells, remote, link, false};
  int code = 1;
  try {
    code = follow_kernel(follow, handle);
  } catch (const Error&) {
    cancel_kernel(ctx, *executor, store, plan.record.run_id);
    ::close(handle.output_fd);
    throw;
  }
  ::close(handle.output_fd);
  return code;
}

}  // namespace mlw::api

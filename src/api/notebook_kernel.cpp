// `mlw notebook kernel` (docs/notebooks.md): what Jupyter runs for a kernel of mlw's. The kernel
// (python -m mlw.kernel, python/mlw/kernel.py) runs as a run of the configuration's target; this
// process follows it, makes each cell it executes a run of the history (from the run folder's
// cells.jsonl), and cancels it when Jupyter stops this process.

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "mlw/api/notebook.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "notebook_session.hpp"
#include "run_start.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

namespace {

/// The most bytes of cells.jsonl read in one look (a line longer than this is skipped).
constexpr std::size_t k_events_chunk = 1 << 20;

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int signal) {
  g_stop_signal = signal;
}

/// Makes the kernel's executed cells runs of the history, as cells.jsonl tells them.
class CellRecorder {
 public:
  /// `connection`: Jupyter's connection file (its name holds the kernel's id in Jupyter).
  CellRecorder(HistoryStore& store, const RunRecord& kernel, fs::path run_dir, fs::path connection)
      : m_store(store),
        m_kernel(kernel),
        m_run_dir(std::move(run_dir)),
        m_connection(std::move(connection)) {}

  /// Reads what cells.jsonl gained since the last look; records each cell that ended.
  void poll() {
    std::ifstream in(m_run_dir / "cells.jsonl", std::ios::binary);
    if (!in) return;
    in.seekg(static_cast<std::streamoff>(m_offset));
    std::string chunk(k_events_chunk, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    std::size_t begin = 0;
    for (auto end = chunk.find('\n'); end != std::string::npos; end = chunk.find('\n', begin)) {
      take(chunk.substr(begin, end - begin));
      begin = end + 1;
    }
    // A line longer than a whole chunk is not a line of mlw.kernel's: skipped.
    m_offset += begin == 0 && chunk.size() == k_events_chunk ? chunk.size() : begin;
  }

 private:
  void take(const std::string& line) {
    const auto event = nlohmann::json::parse(line, nullptr, false);
    if (!event.is_object() || !event.contains("cell") || !event["cell"].is_number_integer()) {
      spdlog::warn("notebook kernel {}: a line of cells.jsonl is not a cell's event",
                   m_kernel.run_id);
      return;
    }
    const int cell = event["cell"].get<int>();
    const std::string kind = event.value("event", "");
    if (kind == "start") {
      m_started[cell] = event;
    } else if (kind == "end" && m_started.contains(cell)) {
      record(cell, m_started[cell], event);
      m_started.erase(cell);
    }
  }

  void record(int cell, const nlohmann::json& start, const nlohmann::json& end) {
    if (m_notebook.empty()) m_notebook = notebook_of_kernel(m_connection);
    RunRecord run;
    run.project = m_kernel.project;
    run.script = m_notebook.empty() ? "(notebook)" : m_notebook;
    run.notebook = m_notebook;
    run.cell = cell;
    run.kernel = m_kernel.run_id;
    run.run_config = m_kernel.run_config;
    run.target = m_kernel.target;
    run.target_type = m_kernel.target_type;
    run.user = m_kernel.user;
    run.host = m_kernel.host;
    run.created_ms = start.value("time_ms", std::int64_t{0});
    run.start_ms = run.created_ms;
    run.end_ms = end.value("time_ms", run.start_ms);
    const bool ok = end.value("ok", false);
    run.status = ok ? status::k_completed : status::k_failed;
    run.exit_code = ok ? 0 : 1;
    if (!ok) run.problems.push_back(end.value("error", std::string("the cell raised")));
    m_store.create(run, run.created_ms);
    const fs::path folder = m_store.run_dir(run.run_id);
    atomic_write_file(folder / "cell.py", start.value("source", std::string()), 0600);
    std::error_code ec;
    const fs::path metrics = m_run_dir / "cells" / std::to_string(cell) / "metrics.jsonl";
    if (fs::copy_file(metrics, folder / "metrics.jsonl", ec)) {
      run.metrics = last_metric_values(folder / "metrics.jsonl", &run.problems);
    }
    m_store.save(run);
    spdlog::info("notebook kernel {}: cell {} is run {} ({})", m_kernel.run_id, cell, run.run_id,
                 run.status);
  }

 private:
  HistoryStore& m_store;
  RunRecord m_kernel;
  fs::path m_run_dir;
  fs::path m_connection;
  std::size_t m_offset = 0;
  std::map<int, nlohmann::json> m_started;
  std::string m_notebook;
};

/// Follows the kernel's run until it ends (its code) or a stop signal came (the run canceled).
int follow_kernel(Context& ctx, Executor& executor, HistoryStore& store, const RunPlan& plan,
                  CellRecorder& cells) {
  const std::string id = plan.record.run_id;
  std::chrono::steady_clock::time_point stopping{};
  while (true) {
    cells.poll();
    const RunRecord now = store.load(id);
    if (status::is_final(now.status)) {
      cells.poll();
      spdlog::info("notebook kernel {} is {}", id, now.status);
      return now.exit_code.value_or(1);
    }
    if (g_stop_signal != 0 && stopping == std::chrono::steady_clock::time_point{}) {
      spdlog::info("notebook kernel {}: stopped by signal {}: canceling its run", id,
                   static_cast<int>(g_stop_signal));
      request_cancel(store, id);
      executor.stop(ctx, now, false);
      stopping = std::chrono::steady_clock::now();
    }
    // Jupyter kills a kernel that has not ended 5 s after its SIGTERM: the run ends on its own.
    if (stopping != std::chrono::steady_clock::time_point{} &&
        std::chrono::steady_clock::now() > stopping + std::chrono::seconds(4)) {
      return 143;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

int notebook_kernel(Context& ctx, const std::string& run_config, const fs::path& connection_file) {
  std::ifstream in(connection_file);
  const auto connection = nlohmann::json::parse(in, nullptr, false);
  if (!in || !connection.is_object() || !connection.contains("shell_port")) {
    throw Error(fmt::format("{} is not a Jupyter connection file", connection_file.string()));
  }
  SubmitRequest request;
  request.run_config = run_config;
  request.python_module = "mlw.kernel";
  request.arguments = {fs::absolute(connection_file).string(), std::to_string(::getpid())};
  std::unique_ptr<Executor> executor;
  RunPlan plan = plan_run(ctx, request, executor);
  if (plan.compute.type != "local") {
    throw Error(fmt::format(
        "notebook kernels run on local targets only so far (run configuration {} is on {}, a {} "
        "target)",
        run_config, plan.target_name, plan.compute.type));
  }
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  for (const int signal : {SIGTERM, SIGHUP, SIGINT}) ::sigaction(signal, &action, nullptr);
  const int started = run_plan(ctx, plan, *executor, true, false);
  if (started != 0) return started;
  HistoryStore store(plan.history_dir);
  CellRecorder cells(store, store.load(plan.record.run_id), plan.run_dir, connection_file);
  return follow_kernel(ctx, *executor, store, plan, cells);
}

}  // namespace mlw::api

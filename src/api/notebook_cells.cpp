// A notebook kernel's cells as runs of the history (docs/notebooks.md): each cell executed for
// the notebook, as python/mlw/kernel.py tells it on its run's output, is a run with the
// notebook, the cell's number, the kernel's run, its status, its source and its metrics.

#include "notebook_cells.hpp"

#include <spdlog/spdlog.h>

#include "mlw/history/collect.hpp"
#include "mlw/util/fs.hpp"
#include "notebook_session.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

std::string text_at(const nlohmann::json& object, const char* key, const std::string& otherwise) {
  const auto value = object.value(key, nlohmann::json());
  return value.is_string() ? value.get<std::string>() : otherwise;
}

std::optional<nlohmann::json> CellRecorder::take(const std::string& text) {
  const auto event = nlohmann::json::parse(text, nullptr, false);
  if (event.is_object() && text_at(event, "event") == "ports") return event;
  if (!event.is_object() || !event.contains("cell") || !event["cell"].is_number_integer()) {
    spdlog::warn("notebook kernel {}: a line of its output is not a kernel's event",
                 m_kernel.run_id);
    return std::nullopt;
  }
  const int cell = event["cell"].get<int>();
  const std::string kind = text_at(event, "event");
  if (kind == "start") {
    m_started[cell] = event;
  } else if (kind == "end" && m_started.contains(cell)) {
    record(cell, m_started[cell], event);
    m_started.erase(cell);
  }
  return std::nullopt;
}

void CellRecorder::record(int cell, const nlohmann::json& start, const nlohmann::json& end) {
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
  const auto time_of = [](const nlohmann::json& event, std::int64_t otherwise) {
    const auto value = event.value("time_ms", nlohmann::json());
    return value.is_number_integer() ? value.get<std::int64_t>() : otherwise;
  };
  run.created_ms = time_of(start, 0);
  run.start_ms = run.created_ms;
  run.end_ms = time_of(end, run.start_ms);
  const bool ok = end.value("ok", nlohmann::json()) == true;
  run.status = ok ? status::k_completed : status::k_failed;
  run.exit_code = ok ? 0 : 1;
  if (!ok) {
    const auto error = end.value("error", nlohmann::json());
    run.problems.push_back(error.is_string() ? error.get<std::string>() : "the cell raised");
  }
  m_store.create(run, run.created_ms);
  const fs::path folder = m_store.run_dir(run.run_id);
  const auto source = start.value("source", nlohmann::json());
  atomic_write_file(folder / "cell.py", source.is_string() ? source.get<std::string>() : "", 0600);
  std::string metrics;
  for (const auto& line : end.value("metrics", nlohmann::json::array())) {
    if (line.is_string()) metrics += line.get<std::string>() + "\n";
  }
  if (!metrics.empty()) {
    atomic_write_file(folder / "metrics.jsonl", metrics, 0600);
    run.metrics = last_metric_values(folder / "metrics.jsonl", &run.problems);
  }
  m_store.save(run);
  spdlog::info("notebook kernel {}: cell {} is run {} ({})", m_kernel.run_id, cell, run.run_id,
               run.status);
}

}  // namespace mlw::api

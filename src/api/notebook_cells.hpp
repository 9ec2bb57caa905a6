#pragma once

// The events a notebook kernel of mlw's (python/mlw/kernel.py) writes on its run's output, and
// the runs of the history that its cells become (`mlw notebook kernel`).

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mlw/history/record.hpp"
#include "mlw/history/store.hpp"

namespace mlw::api {

/// What begins a line of the kernel's events on its run's output (then one JSON object).
inline constexpr std::string_view k_kernel_event_mark = "\x1emlw-kernel ";

/// The string at `key` of the JSON object `object`; `otherwise` when it is missing or not a
/// string (what a target or a file says is not trusted to have the right types).
std::string text_at(const nlohmann::json& object, const char* key,
                    const std::string& otherwise = {});

/// Makes the cells that the kernel executed runs of the history, as its events tell them.
class CellRecorder {
 public:
  /// `connection`: Jupyter's connection file (its name holds the kernel's id in Jupyter).
  CellRecorder(HistoryStore& store, RunRecord kernel, std::filesystem::path connection)
      : m_store(store), m_kernel(std::move(kernel)), m_connection(std::move(connection)) {}

  /// Takes one event (the text after the mark); returns the kernel's ports when it is the
  /// event that says them.
  std::optional<nlohmann::json> take(const std::string& text);

 private:
  void record(int cell, const nlohmann::json& start, const nlohmann::json& end);

  HistoryStore& m_store;
  RunRecord m_kernel;
  std::filesystem::path m_connection;
  std::map<int, nlohmann::json> m_started;
  std::string m_notebook;
};

/// Splits a run's live output into lines (at most `limit` bytes each: the rest of a longer line
/// is dropped), handing each to `on_line` without its '\n'.
class LineSplitter {
 public:
  explicit LineSplitter(std::size_t limit) : m_limit(limit) {}
  /// Takes `size` more bytes.
  template <typename F>
  void feed(const char* data, std::size_t size, F&& on_line) {
    for (std::size_t i = 0; i < size; ++i) {
      if (data[i] == '\n') {
        if (!m_dropping) on_line(m_line);
        m_line.clear();
        m_dropping = false;
      } else if (m_line.size() < m_limit) {
        m_line += data[i];
      } else {
        m_dropping = true;
      }
    }
  }

 private:
  std::size_t m_limit;
  std::string m_line;
  bool m_dropping = false;
};

}  // namespace mlw::api

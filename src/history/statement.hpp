#pragma once

// The history store's prepared statements (private to src/history/).

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "mlw/history/store.hpp"

namespace mlw {

/// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : m_db(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr) != SQLITE_OK) m_stmt = nullptr;
  }
  ~Statement() { sqlite3_finalize(m_stmt); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return m_stmt != nullptr; }
  sqlite3_stmt* get() const { return m_stmt; }
  void bind(int index, const std::string& text) {
    sqlite3_bind_text(m_stmt, index, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int index, std::int64_t value) { sqlite3_bind_int64(m_stmt, index, value); }
  void bind(int index, double value) { sqlite3_bind_double(m_stmt, index, value); }
  void bind_null(int index) { sqlite3_bind_null(m_stmt, index); }
  /// A parameter's value: an integer (a bool as 0/1), a number, or text.
  void bind_value(int index, const nlohmann::ordered_json& value) {
    if (value.is_boolean()) {
      bind(index, static_cast<std::int64_t>(value.get<bool>()));
    } else if (value.is_number_integer()) {
      bind(index, value.get<std::int64_t>());
    } else if (value.is_number()) {
      bind(index, value.get<double>());
    } else if (value.is_string()) {
      bind(index, value.get<std::string>());
    } else {
      bind_null(index);
    }
  }
  /// A column as JSON: null, an integer, a number or text.
  nlohmann::ordered_json value(int column) const {
    switch (sqlite3_column_type(m_stmt, column)) {
      case SQLITE_INTEGER:
        return integer(column);
      case SQLITE_FLOAT:
        return real(column);
      case SQLITE_NULL:
        return nullptr;
      default:
        return text(column);
    }
  }
  int step() { return sqlite3_step(m_stmt); }
  std::string text(int column) const {
    const auto* value = sqlite3_column_text(m_stmt, column);
    return value ? reinterpret_cast<const char*>(value) : "";
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(m_stmt, column); }
  bool is_null(int column) const { return sqlite3_column_type(m_stmt, column) == SQLITE_NULL; }
  double real(int column) const { return sqlite3_column_double(m_stmt, column); }

 private:
  sqlite3* m_db;
  sqlite3_stmt* m_stmt = nullptr;
};

/// The index table that holds a field's values: `params`, or `metrics_last` (each ended run's
/// numeric metrics, last value).
inline const char* field_table(const RunField& field) {
  return field.kind == "metric" ? "metrics_last" : "params";
}

/// A condition's operator in SQL: `!=` is `<>`, `==` is `=`; <, <=, >, >=, = as written (the
/// parser allows no other).
inline std::string sql_operator(const std::string& op) {
  if (op == "!=") return "<>";
  if (op == "==") return "=";
  return op;
}

/// The columns every listing selects first, in this order: run_id, run_number, script, target,
/// status, created_ms, start_ms, end_ms, exit_code (SELECT r.run_id, … r.exit_code).
inline constexpr const char* k_summary_columns =
    "r.run_id, r.run_number, r.script, r.target, r.status, r.created_ms, r.start_ms, r.end_ms,"
    " r.exit_code";

/// Reads the k_summary_columns of the statement's current row (columns 0 to 8).
inline RunSummary summary_of(const Statement& stmt) {
  RunSummary run;
  run.run_id = stmt.text(0);
  run.run_number = stmt.integer(1);
  run.script = stmt.text(2);
  run.target = stmt.text(3);
  run.status = stmt.text(4);
  run.created_ms = stmt.integer(5);
  run.start_ms = stmt.integer(6);
  run.end_ms = stmt.integer(7);
  if (!stmt.is_null(8)) run.exit_code = static_cast<int>(stmt.integer(8));
  return run;
}

}  // namespace mlw

// `history list`: the index's rows with parameter and metric columns, filters and sorting.
#include <fmt/format.h>

#include <map>

#include "mlw/history/store.hpp"
#include "mlw/util/strings.hpp"
#include "statement.hpp"

namespace mlw {

namespace {

/// The SQL of a query, built from its parts; values are bound by number (`?N`).
struct ListSql {
  std::string joins;
  std::vector<std::string> where;
  std::vector<nlohmann::ordered_json> binds;
  std::vector<std::pair<std::string, std::string>> joined;  // (kind, name) of alias fK

  std::string bind(nlohmann::ordered_json value) {
    binds.push_back(std::move(value));
    return "?" + std::to_string(binds.size());
  }
  /// The column of a field's value (joined once per field).
  std::string column(const RunField& field) {
    for (std::size_t i = 0; i < joined.size(); ++i) {
      if (joined[i].first == field.kind && joined[i].second == field.name) {
        return fmt::format("f{}.value", i);
      }
    }
    const std::string alias = fmt::format("f{}", joined.size());
    const char* table = field_table(field);
    joins += fmt::format(" LEFT JOIN {} {} ON {}.run_id = r.run_id AND {}.name = {}", table, alias,
                         alias, alias, bind(field.name));
    joined.emplace_back(field.kind, field.name);
    return alias + ".value";
  }
};

}  // namespace

std::vector<RunSummary> HistoryStore::list(const RunQuery& query) {
  repair_ended_rows();
  ListSql sql;
  std::string columns;
  for (const auto& field : query.columns) columns += ", " + sql.column(field);
  if (!query.target.empty()) sql.where.push_back("r.target = " + sql.bind(query.target));
  if (!query.status.empty()) sql.where.push_back("r.status = " + sql.bind(query.status));
  if (!query.sweep_id.empty()) sql.where.push_back("r.sweep_id = " + sql.bind(query.sweep_id));
  if (query.run_ids) {
    std::vector<std::string> ids;
    for (const auto& id : *query.run_ids) ids.push_back(sql.bind(id));
    sql.where.push_back("r.run_id IN (" + (ids.empty() ? std::string("NULL") : join(ids, ", ")) +
                        ")");
  }
  for (const auto& condition : query.where) {
    sql.where.push_back(fmt::format("{} {} {}", sql.column(condition.field),
                                    sql_operator(condition.op), sql.bind(condition.value)));
  }
  std::string order = "r.run_number DESC";
  if (query.sort) {
    const std::string sorted = sql.column(*query.sort);
    order = fmt::format("{} IS NULL, {} {}, r.run_number {}", sorted, sorted,
                        query.descending ? "DESC" : "ASC", query.sweep_id.empty() ? "DESC" : "ASC");
  } else if (!query.sweep_id.empty()) {
    order = "r.run_number ASC";  // a sweep's runs in the order of its points
  }
  std::string text = std::string("SELECT ") + k_summary_columns + ", r.sweep_id" + columns +
                     " FROM runs r" + sql.joins;
  for (std::size_t i = 0; i < sql.where.size(); ++i) {
    text += (i ? " AND " : " WHERE ") + sql.where[i];
  }
  text += " ORDER BY " + order;
  if (query.top > 0) text += " LIMIT " + std::to_string(query.top);
  Statement stmt(m_db, text.c_str());
  if (!stmt.ok()) fail("listing runs");
  for (std::size_t i = 0; i < sql.binds.size(); ++i) {
    stmt.bind_value(static_cast<int>(i + 1), sql.binds[i]);
  }
  std::vector<RunSummary> rows;
  int rc;
  while ((rc = stmt.step()) == SQLITE_ROW) {
    RunSummary row = summary_of(stmt);
    row.sweep_id = stmt.text(9);
    for (std::size_t i = 0; i < query.columns.size(); ++i) {
      row.values.push_back(stmt.value(static_cast<int>(10 + i)));
    }
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) fail("listing runs");
  return rows;
}

std::vector<SweepRow> HistoryStore::sweep_rows(const std::string& sweep_id) {
  repair_ended_rows();
  std::vector<SweepRow> rows;
  std::map<std::string, std::size_t> index;
  {
    Statement stmt(
        m_db,
        "SELECT run_id, run_number, script, target, status, created_ms, start_ms, end_ms,"
        " exit_code, COALESCE(problem, '') FROM runs WHERE sweep_id = ?"
        " ORDER BY run_number");
    if (!stmt.ok()) fail("reading a sweep");
    stmt.bind(1, sweep_id);
    while (stmt.step() == SQLITE_ROW) {
      SweepRow row;
      row.run = summary_of(stmt);
      row.run.sweep_id = sweep_id;
      row.problem = stmt.text(9);
      index[row.run.run_id] = rows.size();
      rows.push_back(std::move(row));
    }
  }
  for (const char* table : {"params", "metrics_last"}) {
    Statement stmt(m_db, fmt::format("SELECT t.run_id, t.name, t.value FROM {} t JOIN runs r ON"
                                     " r.run_id = t.run_id WHERE r.sweep_id = ?",
                                     table)
                             .c_str());
    if (!stmt.ok()) fail("reading a sweep");
    stmt.bind(1, sweep_id);
    const bool params = std::string_view(table) == "params";
    while (stmt.step() == SQLITE_ROW) {
      const auto found = index.find(stmt.text(0));
      if (found == index.end()) continue;
      SweepRow& row = rows[found->second];
      (params ? row.params : row.metrics)[stmt.text(1)] = stmt.value(2);
    }
  }
  return rows;
}

}  // namespace mlw

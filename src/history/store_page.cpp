// The dashboard's queries over the history index: a filtered, sorted page of runs, and facets.
#include <fmt/format.h>

#include <map>

#include "mlw/history/store.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"
#include "statement.hpp"

namespace mlw {

namespace {

/// The ORDER BY expression of each sort column (the run number breaks ties).
const std::map<std::string, std::string>& sort_columns() {
  static const std::map<std::string, std::string> columns = {
      {"run_number", "r.run_number"},
      {"run_id", "r.run_id"},
      {"script", "r.script"},
      {"target", "r.target"},
      {"status", "r.status"},
      {"created", "r.created_ms"},
      {"duration",
       "CASE WHEN r.start_ms = 0 THEN NULL ELSE "
       "(CASE WHEN r.end_ms = 0 THEN ?8 ELSE r.end_ms END) - r.start_ms END"},
      {"exit_code", "r.exit_code"},
      {"metric", "m.value"},
  };
  return columns;
}

/// `text` as a LIKE pattern that matches it anywhere, its wildcards taken literally.
std::string like_anywhere(const std::string& text) {
  std::string pattern = "%";
  for (const char c : text) {
    if (c == '%' || c == '_' || c == '\\') pattern += '\\';
    pattern += c;
  }
  return pattern + "%";
}

}  // namespace

RunPage HistoryStore::page(const RunPageQuery& query, std::int64_t now_ms) {
  repair_ended_rows();
  const auto& columns = sort_columns();
  auto column = columns.find(query.sort);
  // A parameter's or a metric's column: `param:NAME`, `metric:NAME` (joined as s, ?10).
  const bool field_sort = query.sort.starts_with("param:") || query.sort.starts_with("metric:");
  if (field_sort) column = columns.find("metric");
  if (column == columns.end()) {
    std::vector<std::string> names;
    for (const auto& [name, sql] : columns) names.push_back(name);
    throw UsageError(fmt::format("sort must be one of {}, param:NAME or metric:NAME{}",
                                 join(names, ", "), did_you_mean(query.sort, names)));
  }
  std::string sort_join;
  std::string sort_column = column->second;
  if (field_sort) {
    const RunField sorted{query.sort.substr(0, query.sort.find(':')), ""};
    sort_join =
        fmt::format(" LEFT JOIN {} s ON s.run_id = r.run_id AND s.name = ?10", field_table(sorted));
    sort_column = "s.value";
  }
  // Filters on fields (?12 on: a name, then a value, each).
  std::string conditions;
  for (std::size_t i = 0; i < query.where.size(); ++i) {
    const RunCondition& c = query.where[i];
    conditions += fmt::format(
        " AND EXISTS (SELECT 1 FROM {} w WHERE w.run_id = r.run_id AND w.name = ?{} AND w.value "
        "{} ?{})",
        field_table(c.field), 12 + 2 * i, sql_operator(c.op), 13 + 2 * i);
  }
  const std::string where =
      " FROM runs r LEFT JOIN metrics_last m ON m.run_id = r.run_id AND m.name = ?6" + sort_join +
      " WHERE (?11 = '' OR r.sweep_id = ?11)" + conditions +
      " AND (?1 = '' OR r.status = ?1) AND (?2 = '' OR r.target = ?2)"
      " AND (?3 = '' OR r.script = ?3) AND (?4 = '' OR r.run_id LIKE ?5 ESCAPE '\\'"
      " OR r.script LIKE ?5 ESCAPE '\\' OR r.target LIKE ?5 ESCAPE '\\'"
      " OR r.status LIKE ?5 ESCAPE '\\' OR r.problem LIKE ?5 ESCAPE '\\')";
  const auto bind_filters = [&](Statement& stmt) {
    stmt.bind(1, query.status);
    stmt.bind(2, query.target);
    stmt.bind(3, query.script);
    stmt.bind(4, query.text);
    stmt.bind(5, like_anywhere(query.text));
    stmt.bind(6, query.metric);
    stmt.bind(10, query.sort.substr(query.sort.find(':') + 1));
    stmt.bind(11, query.sweep_id);
    for (std::size_t i = 0; i < query.where.size(); ++i) {
      stmt.bind(static_cast<int>(12 + 2 * i), query.where[i].field.name);
      stmt.bind_value(static_cast<int>(13 + 2 * i), query.where[i].value);
    }
  };
  RunPage page;
  {
    // Without a filter the count needs no join (the metric join never adds rows).
    const bool filtered = !query.status.empty() || !query.target.empty() || !query.script.empty() ||
                          !query.text.empty() || !query.sweep_id.empty() || !query.where.empty();
    Statement count(m_db,
                    filtered ? ("SELECT COUNT(*)" + where).c_str() : "SELECT COUNT(*) FROM runs");
    if (!count.ok()) fail("counting runs");
    if (filtered) bind_filters(count);
    if (count.step() != SQLITE_ROW) fail("counting runs");
    page.total = count.integer(0);
  }
  const char* direction = query.descending ? "DESC" : "ASC";
  // Runs without a value last; a column that is never NULL sorts on its index alone.
  const bool nullable =
      query.sort == "duration" || query.sort == "exit_code" || query.sort == "metric" || field_sort;
  const std::string nulls_last = nullable ? fmt::format("({}) IS NULL, ", sort_column) : "";
  const std::string sql = fmt::format(
      "SELECT {}, r.problem, m.value{} ORDER BY {}{} {}, r.run_number {} LIMIT ?7 OFFSET ?9",
      k_summary_columns, where, nulls_last, sort_column, direction, direction);
  Statement stmt(m_db, sql.c_str());
  if (!stmt.ok()) fail("listing runs");
  bind_filters(stmt);
  stmt.bind(7, std::max<std::int64_t>(0, query.limit));
  stmt.bind(8, now_ms);
  stmt.bind(9, std::max<std::int64_t>(0, query.offset));
  int rc;
  while ((rc = stmt.step()) == SQLITE_ROW) {
    RunPageRow row;
    row.run = summary_of(stmt);
    row.problem = stmt.text(9);
    if (!stmt.is_null(10)) row.metric = stmt.real(10);
    page.rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) fail("listing runs");
  // The chosen columns' values: one statement per column, for every row of the page.
  for (const auto& field : query.columns) {
    Statement value(
        m_db, fmt::format("SELECT value FROM {} WHERE run_id = ? AND name = ?", field_table(field))
                  .c_str());
    if (!value.ok()) fail("reading the runs' fields");
    for (auto& row : page.rows) {
      sqlite3_reset(value.get());
      value.bind(1, row.run.run_id);
      value.bind(2, field.name);
      row.values.push_back(value.step() == SQLITE_ROW ? value.value(0) : nlohmann::ordered_json());
    }
  }
  return page;
}

RunFacets HistoryStore::facets() {
  const auto column = [&](const char* sql) {
    std::vector<std::string> values;
    Statement stmt(m_db, sql);
    if (!stmt.ok()) fail("reading the history");
    while (stmt.step() == SQLITE_ROW) values.push_back(stmt.text(0));
    return values;
  };
  RunFacets facets;
  facets.targets = column("SELECT DISTINCT target FROM runs ORDER BY target");
  facets.scripts = column("SELECT DISTINCT script FROM runs ORDER BY script");
  facets.metrics = column("SELECT DISTINCT name FROM metrics_last ORDER BY name");
  facets.params = column("SELECT DISTINCT name FROM params ORDER BY name");
  facets.sweeps = column(
      "SELECT sweep_id FROM runs WHERE sweep_id IS NOT NULL GROUP BY sweep_id"
      " ORDER BY MAX(run_number) DESC");
  return facets;
}

}  // namespace mlw

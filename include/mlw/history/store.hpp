#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mlw/history/record.hpp"

struct sqlite3;

namespace mlw {

/// A line of `history list`: the indexed columns of a run.
struct RunSummary {
  std::string run_id;
  std::int64_t run_number = 0;
  std::string script;
  std::string target;
  std::string status;
  std::int64_t created_ms = 0;
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  std::optional<int> exit_code;
  std::string sweep_id;                        ///< empty: not a sweep's
  std::vector<nlohmann::ordered_json> values;  ///< the query's columns, in order (null: none)
};

/// A run's parameter or a metric's last value, as `history list` names it (`param:lr`,
/// `metric:loss`; a bare name is a parameter).
struct RunField {
  std::string kind;  ///< "param" or "metric"
  std::string name;
};

/// A filter on a field: `lr<0.1`, `metric:loss<=0.2`, `optimizer=adam`.
struct RunCondition {
  RunField field;
  std::string op;  ///< <, <=, >, >=, =, !=
  nlohmann::ordered_json value;
};

/// Filters of `history list`.
struct RunQuery {
  /// A query of the runs on `target` with `status`, at most `top` (empty, 0: all).
  RunQuery(std::string target_ = "", std::string status_ = "", int top_ = 0)
      : target(std::move(target_)), status(std::move(status_)), top(top_) {}
  std::string target;    ///< empty: all
  std::string status;    ///< empty: all
  int top = 0;           ///< 0: all
  std::string sweep_id;  ///< empty: all
  /// Only these runs (none: all): `history list --data`, which the records answer.
  std::optional<std::vector<std::string>> run_ids;
  std::vector<RunField> columns;    ///< fields shown beside each run (RunSummary::values)
  std::vector<RunCondition> where;  ///< all must hold (a run without the field fails)
  std::optional<RunField> sort;     ///< none: newest first; runs without it come last
  bool descending = false;          ///< for `sort`
};

/// One page of runs for the dashboard: filters, a sort column, and where the page starts.
struct RunPageQuery {
  std::string status;  ///< empty: all
  std::string target;  ///< empty: all
  std::string script;  ///< empty: all
  std::string text;    ///< empty: all; else a substring of id, script, target, status or problem
  /// run_number, run_id, script, target, status, created, duration, exit_code or metric.
  std::string sort = "run_number";
  bool descending = true;
  std::string metric;    ///< the metric whose last value is shown (and sorted by, for "metric")
  std::string sweep_id;  ///< empty: all
  std::vector<RunField> columns;    ///< parameters and metrics shown (RunPageRow::values)
  std::vector<RunCondition> where;  ///< all must hold
  std::int64_t offset = 0;
  std::int64_t limit = 50;
};

/// A row of a page: the indexed columns, the problem and the chosen metric's last value.
struct RunPageRow {
  RunSummary run;
  std::string problem;
  std::optional<double> metric;
  std::vector<nlohmann::ordered_json> values;  ///< the query's columns, in order (null: none)
};

/// A run of a sweep as its dashboard page shows it.
struct SweepRow {
  RunSummary run;
  std::string problem;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();  ///< numeric last values
};

/// A page of runs and how many runs match the filters in all.
struct RunPage {
  std::int64_t total = 0;
  std::vector<RunPageRow> rows;
};

/// What the dashboard's filters offer: targets, scripts, metric and parameter names, sweeps.
struct RunFacets {
  std::vector<std::string> targets;
  std::vector<std::string> scripts;
  std::vector<std::string> metrics;
  std::vector<std::string> params;
  std::vector<std::string> sweeps;  ///< newest first
};

/// The project's run history: `.mlw/history.db` (SQLite, WAL) indexes the records kept in
/// `.mlw/runs/<run_id>/run.json`. Safe for many processes at once.
/// Up to `limit` run ids that start with `prefix`, newest first, read from the index without
/// opening it for writing (shell completion); empty when there is no index yet.
std::vector<std::string> run_ids_with_prefix(const std::filesystem::path& state_dir,
                                             const std::string& prefix, int limit);

/// A run's record as `read` (its run.json) gives it where that says the run ended, else with the
/// index's final row brought in by `merge` (the run ended but its run.json could not be written),
/// unless run.json, read again, has ended meanwhile: the run ended between the two reads, and its
/// own record says all of it (why it was lost, its metrics), the index row only some.
std::optional<RunRecord> ended_record(const std::function<std::optional<RunRecord>()>& read,
                                      const std::function<bool(RunRecord&)>& merge);

class HistoryStore {
 public:
  /// Opens (and creates when missing) the history of the project whose state folder is
  /// `state_dir`. A missing index is rebuilt from the run folders.
  explicit HistoryStore(std::filesystem::path state_dir);
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;
  /// Takes over the other store's connection.
  HistoryStore(HistoryStore&& other) noexcept;

  /// Allocates a unique run id (`<project>_<epoch-ms>`, bumped on collision) and run number,
  /// creates the run folder and writes the record. Fills record.run_id and run_number.
  void create(RunRecord& record, std::int64_t now_ms);
  /// Creates many records in one transaction (a sweep's points): ids and numbers in order; the
  /// run.json files are synced once at the end. All or none are recorded.
  void create_many(std::vector<RunRecord>& records, std::int64_t now_ms);
  /// Writes the record (run.json atomically, then the index row); `durable` false skips the
  /// fsync for intermediate states that a later save supersedes. When run.json cannot be
  /// written, the index row still gets the status, exit code and the problem, then it throws.
  void save(const RunRecord& record, bool durable = true);
  /// The record of `run_id`; throws mlw::Error (listing near ids) when there is none. A final
  /// status in the index wins over a run.json that could not be updated (see ended_record).
  RunRecord load(const std::string& run_id);
  /// The newest run's id, or nullopt when there are no runs.
  std::optional<std::string> last_run_id();
  /// Index rows matching the query, newest first. Rows the index still shows live whose run.json
  /// has ended are brought to the record first (the record is written before the index, and an
  /// index write that failed — the database busy past the lock timeout on a loaded machine —
  /// must not leave a run Queued in the list while `info` says Canceled).
  std::vector<RunSummary> list(const RunQuery& query);
  /// One page of runs (the dashboard): never more than `limit` rows are read. Throws
  /// mlw::UsageError for an unknown sort column.
  RunPage page(const RunPageQuery& query, std::int64_t now_ms);
  /// The targets, scripts and metric names found in the index.
  RunFacets facets();
  /// Every run of a sweep with its parameters and metrics' last values, in point order.
  std::vector<SweepRow> sweep_rows(const std::string& sweep_id);
  /// Marks live runs whose supervisor is gone (this host) as Lost; returns how many.
  int reconcile_lost(const std::string& host);
  /// The folder of a run.
  std::filesystem::path run_dir(const std::string& run_id) const;
  /// The runs folder.
  std::filesystem::path runs_dir() const { return m_state_dir / "runs"; }

 private:
  void open();
  int user_version();
  void index_run_folders();
  std::optional<RunRecord> read_record(const std::filesystem::path& folder) const;
  void write_record(const RunRecord& record, bool durable);
  /// Brings the index's final row into `record`; false (and `record` untouched) where the index
  /// has the run live too.
  bool merge_final_index_row(RunRecord& record);
  /// Live index rows whose run.json has ended, brought to it (see list()).
  void repair_ended_rows();
  void exec(const char* sql);
  /// The index row of `record`; `is_new` (created, or read from its folder): its parameters too,
  /// which otherwise are written only once it has ended.
  void upsert(const RunRecord& record, bool is_new = false);
  void create_metrics_table();
  void record_metrics(const RunRecord& record);
  void record_params(const RunRecord& record);
  void migrate(int found);
  std::string unique_run_id(const std::string& project, std::int64_t& ms);
  [[noreturn]] void fail(const std::string& what);
  std::filesystem::path m_state_dir;
  std::filesystem::path m_db_path;
  sqlite3* m_db = nullptr;
  int m_lock_timeout_ms = 10000;  ///< how long a locked database is waited for
};

}  // namespace mlw

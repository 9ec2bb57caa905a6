#include "mlw/history/store.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "mlw/history/sweep_record.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/strings.hpp"
#include "statement.hpp"

namespace mlw {

namespace {

constexpr const char* k_live_statuses = "('Queued','Preparing','Running')";
/// 1: the runs table; 2: its `problem` column; 3: `metrics_last` (each ended run's numeric
/// metrics, last value, for sorting by a metric); 4: `runs.sweep_id` and `params` (each run's
/// parameters, for columns, filters and sorting; docs/sweeps.md).
constexpr int k_schema_version = 4;

}  // namespace

HistoryStore::HistoryStore(fs::path state_dir)
    : m_state_dir(std::move(state_dir)), m_db_path(m_state_dir / "history.db") {
  try {
    open();
  } catch (...) {
    sqlite3_close(m_db);  // the destructor does not run for a constructor that throws
    m_db = nullptr;
    throw;
  }
}

HistoryStore::~HistoryStore() {
  sqlite3_close(m_db);
}

HistoryStore::HistoryStore(HistoryStore&& other) noexcept
    : m_state_dir(std::move(other.m_state_dir)),
      m_db_path(std::move(other.m_db_path)),
      m_db(std::exchange(other.m_db, nullptr)),
      m_lock_timeout_ms(other.m_lock_timeout_ms) {}

fs::path HistoryStore::run_dir(const std::string& run_id) const {
  return runs_dir() / run_id;
}

void HistoryStore::fail(const std::string& what) {
  const int code = m_db ? sqlite3_errcode(m_db) : SQLITE_ERROR;
  const std::string detail = m_db ? sqlite3_errmsg(m_db) : "cannot open";
  const std::string shown = ".mlw/history.db";
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    throw Error(
        fmt::format("the history database {} is locked by another process ({}); try again "
                    "when it is done",
                    shown, what));
  }
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
    throw Error(fmt::format(
        "the history database {} is damaged ({}); the runs themselves are safe in .mlw/runs/: "
        "move the database away (mv {} {}.damaged) and mlw rebuilds it from them",
        shown, detail, m_db_path.string(), m_db_path.string()));
  }
  if (code == SQLITE_FULL) {
    throw Error(fmt::format("cannot update the history database {}: the disk is full", shown));
  }
  throw Error(fmt::format("history database {}: {} failed: {}", shown, what, detail));
}

void HistoryStore::exec(const char* sql) {
  // SQLite does not consult the busy handler for every lock (switching a new database to WAL
  // while another process opens it, for one), so busy answers are retried here too.
  using namespace std::chrono;
  const auto deadline = steady_clock::now() + milliseconds(m_lock_timeout_ms);
  while (true) {
    const int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || steady_clock::now() >= deadline) fail(sql);
    std::this_thread::sleep_for(milliseconds(5));
  }
}

int HistoryStore::user_version() {
  using namespace std::chrono;
  const auto deadline = steady_clock::now() + milliseconds(m_lock_timeout_ms);
  while (true) {
    Statement check(m_db, "PRAGMA user_version");
    const int rc = check.ok() ? check.step() : SQLITE_ERROR;
    if (rc == SQLITE_ROW) return static_cast<int>(check.integer(0));
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || steady_clock::now() >= deadline) {
      fail("reading the schema");
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
}

void HistoryStore::open() {
  make_directories(runs_dir());
  if (sqlite3_open_v2(m_db_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    fail("open");
  }
  m_lock_timeout_ms = setting("MLW_HISTORY_LOCK_TIMEOUT_MS");
  sqlite3_busy_timeout(m_db, m_lock_timeout_ms);
  // WAL with synchronous=NORMAL stays consistent after a crash; run.json is the durable record.
  sqlite3_exec(m_db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
  if (user_version() == k_schema_version) return;
  exec("PRAGMA journal_mode=WAL");
  exec("BEGIN IMMEDIATE");
  try {
    const int found = user_version();
    if (found > k_schema_version) {
      throw Error(
          fmt::format("the history database .mlw/history.db was written by a newer mlw "
                      "(schema {}); upgrade mlw",
                      found));
    }
    migrate(found);
    exec(fmt::format("PRAGMA user_version = {}", k_schema_version).c_str());
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void HistoryStore::migrate(int found) {
  if (found == 0) {
    exec(
        "CREATE TABLE IF NOT EXISTS runs ("
        " run_id TEXT PRIMARY KEY, run_number INTEGER NOT NULL UNIQUE, script TEXT NOT NULL,"
        " target TEXT NOT NULL, status TEXT NOT NULL, created_ms INTEGER NOT NULL,"
        " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, exit_code INTEGER, problem TEXT,"
        " sweep_id TEXT);"
        "CREATE INDEX IF NOT EXISTS runs_status ON runs(status);"
        "CREATE INDEX IF NOT EXISTS runs_target ON runs(target, run_number);");
  }
  // Each column is added when missing (an index of another version may have some already).
  const auto add_column = [&](const char* name, const char* sql) {
    Statement check(m_db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = ?");
    check.bind(1, std::string(name));
    if (check.step() != SQLITE_ROW) exec(sql);
  };
  add_column("problem", "ALTER TABLE runs ADD COLUMN problem TEXT");
  add_column("sweep_id", "ALTER TABLE runs ADD COLUMN sweep_id TEXT");
  create_metrics_table();
  exec(
      "CREATE TABLE IF NOT EXISTS params (run_id TEXT NOT NULL, name TEXT NOT NULL, value,"
      " PRIMARY KEY(run_id, name)) WITHOUT ROWID;"
      "CREATE INDEX IF NOT EXISTS params_name ON params(name, value);"
      "CREATE INDEX IF NOT EXISTS runs_sweep ON runs(sweep_id, run_number);");
  // A new index over existing run folders (the old one was damaged and moved away), or an
  // older one given the new columns: rebuilt in the same transaction, before any new run can
  // take a number.
  index_run_folders();
}

std::optional<RunRecord> HistoryStore::read_record(const fs::path& folder) const {
  auto text = read_file_if_exists(folder / "run.json");
  if (!text) return std::nullopt;
  auto json = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (json.is_discarded()) return std::nullopt;
  return RunRecord::from_json(json);
}

void HistoryStore::write_record(const RunRecord& record, bool durable) {
  atomic_write_file(run_dir(record.run_id) / "run.json", record.to_json().dump(2) + "\n", 0644,
                    durable);
}

void HistoryStore::index_run_folders() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(runs_dir(), ec)) {
    if (auto record = read_record(entry.path())) {
      upsert(*record, true);
    } else if (fs::exists(entry.path() / "run.json")) {
      spdlog::warn("the record of run {} ({}) is damaged; it is left out of the index",
                   entry.path().filename().string(), (entry.path() / "run.json").string());
    }
  }
}

void HistoryStore::upsert(const RunRecord& r, bool is_new) {
  Statement stmt(
      m_db,
      "INSERT INTO runs(run_id, run_number, script, target, status, created_ms, start_ms,"
      " end_ms, exit_code, problem, sweep_id) VALUES(?,?,?,?,?,?,?,?,?,?,?)"
      " ON CONFLICT(run_id) DO UPDATE SET status=excluded.status, start_ms=excluded.start_ms,"
      " end_ms=excluded.end_ms, exit_code=excluded.exit_code, problem=excluded.problem,"
      " target=excluded.target");
  if (!stmt.ok()) fail("preparing an update");
  stmt.bind(1, r.run_id);
  stmt.bind(2, r.run_number);
  stmt.bind(3, r.script);
  stmt.bind(4, r.target);
  stmt.bind(5, r.status);
  stmt.bind(6, r.created_ms);
  stmt.bind(7, r.start_ms);
  stmt.bind(8, r.end_ms);
  if (r.exit_code) {
    stmt.bind(9, static_cast<std::int64_t>(*r.exit_code));
  } else {
    stmt.bind_null(9);
  }
  if (r.problems.empty()) {
    stmt.bind_null(10);
  } else {
    stmt.bind(10, join(r.problems, "; "));
  }
  if (r.sweep_id.empty()) {
    stmt.bind_null(11);
  } else {
    stmt.bind(11, r.sweep_id);
  }
  if (stmt.step() != SQLITE_DONE) fail("recording run " + r.run_id);
  // Parameters come from the arguments (known when the run is recorded) and the script (known at
  // the end): written then, not at every save in between.
  if (is_new || status::is_final(r.status)) record_params(r);
  if (status::is_final(r.status)) record_metrics(r);
}

void HistoryStore::record_params(const RunRecord& r) {
  Statement clear(m_db, "DELETE FROM params WHERE run_id = ?");
  if (!clear.ok()) fail("preparing an update");
  clear.bind(1, r.run_id);
  if (clear.step() != SQLITE_DONE) fail("recording the parameters of run " + r.run_id);
  if (r.params.empty()) return;
  Statement insert(m_db, "INSERT INTO params(run_id, name, value) VALUES(?,?,?)");
  if (!insert.ok()) fail("preparing an update");
  for (const auto& [name, value] : r.params.items()) {
    sqlite3_reset(insert.get());
    insert.bind(1, r.run_id);
    insert.bind(2, name);
    insert.bind_value(3, value);
    if (insert.step() != SQLITE_DONE) fail("recording the parameters of run " + r.run_id);
  }
}

void HistoryStore::create_metrics_table() {
  exec(
      "CREATE TABLE IF NOT EXISTS metrics_last (run_id TEXT NOT NULL, name TEXT NOT NULL,"
      " value REAL NOT NULL, PRIMARY KEY(run_id, name)) WITHOUT ROWID;"
      "CREATE INDEX IF NOT EXISTS metrics_last_name ON metrics_last(name, value);"
      "CREATE INDEX IF NOT EXISTS runs_script ON runs(script);");
}

void HistoryStore::record_metrics(const RunRecord& r) {
  Statement clear(m_db, "DELETE FROM metrics_last WHERE run_id = ?");
  if (!clear.ok()) fail("preparing an update");
  clear.bind(1, r.run_id);
  if (clear.step() != SQLITE_DONE) fail("recording the metrics of run " + r.run_id);
  for (const auto& [name, value] : r.metrics.items()) {
    if (!value.is_number()) continue;
    Statement insert(m_db, "INSERT INTO metrics_last(run_id, name, value) VALUES(?,?,?)");
    if (!insert.ok()) fail("preparing an update");
    insert.bind(1, r.run_id);
    insert.bind(2, name);
    insert.bind(3, value.get<double>());
    if (insert.step() != SQLITE_DONE) fail("recording the metrics of run " + r.run_id);
  }
}

void HistoryStore::create(RunRecord& record, std::int64_t now_ms) {
  exec("BEGIN IMMEDIATE");
  try {
    Statement number(m_db, "SELECT COALESCE(MAX(run_number), 0) + 1 FROM runs");
    if (!number.ok() || number.step() != SQLITE_ROW) fail("numbering the run");
    record.run_number = number.integer(0);
    std::int64_t ms = now_ms;
    record.run_id = unique_run_id(record.project, ms);
    make_directories(run_dir(record.run_id), 0700);  // env_vars.json, logs: the user's alone
    write_record(record, true);
    upsert(record, true);
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    // No orphan folder: a run that could not be recorded leaves nothing behind.
    if (!record.run_id.empty()) {
      std::error_code ec;
      fs::remove_all(run_dir(record.run_id), ec);
    }
    throw;
  }
}

std::string HistoryStore::unique_run_id(const std::string& project, std::int64_t& ms) {
  Statement exists(m_db, "SELECT 1 FROM runs WHERE run_id = ?");
  for (;; ++ms) {
    const std::string candidate = fmt::format("{}_{}", project, ms);
    sqlite3_reset(exists.get());
    exists.bind(1, candidate);
    if (exists.step() == SQLITE_ROW || fs::exists(run_dir(candidate))) continue;
    return candidate;
  }
}

void HistoryStore::create_many(std::vector<RunRecord>& records, std::int64_t now_ms) {
  exec("BEGIN IMMEDIATE");
  std::size_t made = 0;
  try {
    Statement number(m_db, "SELECT COALESCE(MAX(run_number), 0) + 1 FROM runs");
    if (!number.ok() || number.step() != SQLITE_ROW) fail("numbering the runs");
    std::int64_t next = number.integer(0);
    std::int64_t ms = now_ms;
    for (auto& record : records) {
      record.run_number = next++;
      record.run_id = unique_run_id(record.project, ms);
      ++ms;
      make_directories(run_dir(record.run_id), 0700);  // env_vars.json, logs: the user's alone
      ++made;
      write_record(record, false);
      upsert(record, true);
    }
    sync_folder(runs_dir());
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    for (std::size_t i = 0; i < made; ++i) {
      std::error_code ec;
      fs::remove_all(run_dir(records[i].run_id), ec);
    }
    throw;
  }
}

void HistoryStore::save(const RunRecord& record, bool durable) {
  try {
    write_record(record, durable);
  } catch (const Error& e) {
    // The run's folder cannot be written (read-only, full): the index still says what happened.
    RunRecord indexed = record;
    indexed.problems.push_back(std::string("run.json could not be updated: ") + e.what());
    upsert(indexed);
    throw;
  }
  upsert(record);
}

RunRecord HistoryStore::load(const std::string& run_id) {
  const bool plain_id =
      run_id.find('/') == std::string::npos && !run_id.empty() && run_id[0] != '.';
  std::optional<RunRecord> record =
      plain_id ? ended_record([&] { return read_record(run_dir(run_id)); },
                              [&](RunRecord& r) { return merge_final_index_row(r); })
               : std::nullopt;
  if (!record) {
    if (plain_id && fs::exists(run_dir(run_id) / "run.json")) {
      throw Error("the record of run " + run_id + " (.mlw/runs/" + run_id +
                  "/run.json) is damaged");
    }
    std::vector<std::string> ids;
    RunQuery recent;
    recent.top = 200;
    for (const auto& row : list(recent)) ids.push_back(row.run_id);
    throw NotFoundError(
        fmt::format("no run \"{}\" in this project's history{}; see: mlw history list", run_id,
                    did_you_mean(run_id, ids)));
  }
  return *record;
}

std::optional<RunRecord> ended_record(const std::function<std::optional<RunRecord>()>& read,
                                      const std::function<bool(RunRecord&)>& merge) {
  std::optional<RunRecord> record = read();
  if (!record || status::is_final(record->status) || !merge(*record)) return record;
  std::optional<RunRecord> again = read();
  return again && status::is_final(again->status) ? again : record;
}

bool HistoryStore::merge_final_index_row(RunRecord& record) {
  Statement stmt(m_db, "SELECT status, end_ms, exit_code, problem FROM runs WHERE run_id = ?");
  if (!stmt.ok()) fail("reading run " + record.run_id);
  stmt.bind(1, record.run_id);
  if (stmt.step() != SQLITE_ROW || !status::is_final(stmt.text(0))) return false;
  record.status = stmt.text(0);
  record.end_ms = stmt.integer(1);
  if (!stmt.is_null(2)) record.exit_code = static_cast<int>(stmt.integer(2));
  if (!stmt.is_null(3)) record.problems = {stmt.text(3)};
  record.pid = 0;
  record.process_group = 0;
  return true;
}

void HistoryStore::repair_ended_rows() {
  std::vector<std::string> live;
  {
    Statement stmt(
        m_db, (std::string("SELECT run_id FROM runs WHERE status IN ") + k_live_statuses).c_str());
    if (!stmt.ok()) return;
    while (stmt.step() == SQLITE_ROW) live.push_back(stmt.text(0));
  }
  for (const auto& run_id : live) {
    const std::optional<RunRecord> record = read_record(run_dir(run_id));
    if (!record || !status::is_final(record->status)) continue;
    try {
      upsert(*record);
    } catch (const Error&) {
      // Still busy: the next reader repairs it.
    }
  }
}

std::optional<std::string> HistoryStore::last_run_id() {
  RunQuery newest;
  newest.top = 1;
  auto rows = list(newest);
  if (rows.empty()) return std::nullopt;
  return rows.front().run_id;
}

int HistoryStore::reconcile_lost(const std::string& host) {
  std::vector<std::pair<std::string, std::string>> live;  // run id, sweep id
  {
    Statement stmt(
        m_db, (std::string("SELECT run_id, COALESCE(sweep_id, '') FROM runs WHERE status IN ") +
               k_live_statuses)
                  .c_str());
    if (!stmt.ok()) fail("checking live runs");
    while (stmt.step() == SQLITE_ROW) live.emplace_back(stmt.text(0), stmt.text(1));
  }
  int lost = 0;
  const std::string this_boot = boot_id();
  const auto owner_alive = [&](const RunRecord& record) {
    const auto started = process_start_time(record.pid);
    return record.boot_id == this_boot && started &&
           (record.pid_start == 0 || *started == record.pid_start);
  };
  // A live sweep's supervisor watches its own runs (those it has not launched have no owner).
  std::map<std::string, bool> sweep_watched;
  const auto watched = [&](const std::string& sweep_id) {
    if (sweep_id.empty()) return false;
    const auto found = sweep_watched.find(sweep_id);
    if (found != sweep_watched.end()) return found->second;
    bool alive = false;
    try {
      alive = sweep_owner_alive(load_sweep(m_state_dir, sweep_id));
    } catch (const Error&) {
    }
    return sweep_watched[sweep_id] = alive;
  };
  for (const auto& [run_id, sweep_id] : live) {
    if (watched(sweep_id)) continue;
    std::optional<RunRecord> first = read_record(run_dir(run_id));
    if (!first) continue;
    RunRecord record = std::move(*first);
    if (record.host != host || status::is_final(record.status) || owner_alive(record)) continue;
    // Read again: the run may have ended, or passed from the submitting process to its
    // supervisor, since the first read.
    record = load(run_id);
    if (status::is_final(record.status)) continue;
    if (!record.sweep_id.empty() && record.pid == 0) {  // a point its sweep never launched
      if (watched(record.sweep_id)) continue;
      record.mark_failed(exit_code::k_cannot_start,
                         fmt::format("the sweep's supervisor ended before this point started; "
                                     "run it with: mlw experiment sweep --resume {}",
                                     record.sweep_id),
                         0);
    } else if (owner_alive(record)) {
      continue;
    } else {
      record.mark_lost(lost_reason::k_supervisor,
                       fmt::format("the process that supervised the run (pid {}) is gone: the "
                                   "machine restarted or mlw was killed",
                                   record.pid));
    }
    try {
      save(record);
    } catch (const Error&) {
      // run.json is not writable; save() has put the status into the index.
    }
    ++lost;
  }
  return lost;
}

}  // namespace mlw

namespace mlw {

std::vector<std::string> run_ids_with_prefix(const fs::path& state_dir, const std::string& prefix,
                                             int limit) {
  std::vector<std::string> ids;
  const fs::path db_path = state_dir / "history.db";
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return ids;
  }
  // Run ids sort by time within a project (<name>_<epoch-ms>): the key's own index, backwards.
  sqlite3_stmt* statement = nullptr;
  const char* sql =
      "SELECT run_id FROM runs WHERE run_id >= ?1 AND substr(run_id, 1, length(?1)) = ?1 "
      "ORDER BY run_id DESC LIMIT ?2";
  if (sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(statement, 1, prefix.data(), static_cast<int>(prefix.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_int(statement, 2, limit);
    while (sqlite3_step(statement) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
      if (text) ids.emplace_back(text);
    }
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return ids;
}

}  // namespace mlw

#include "mlw/api/history.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "mlw/config/targets.hpp"
#include "mlw/data/catalog.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/history/system_use.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"
#include "run_start.hpp"

namespace mlw::api {

namespace {

HistoryStore open_history(Context& ctx) {
  HistoryStore store(ctx.project().state_dir());
  store.reconcile_lost(host_name());
  return store;
}

nlohmann::ordered_json summary_row(const RunSummary& row, std::int64_t now_ms) {
  const std::int64_t duration =
      row.start_ms ? (row.end_ms ? row.end_ms : now_ms) - row.start_ms : 0;
  return {{"run_id", row.run_id},
          {"run_number", row.run_number},
          {"script", row.script},
          {"target", row.target},
          {"status", row.status},
          {"created", utc_or_null(row.created_ms)},
          {"duration", row.start_ms ? nlohmann::ordered_json(format_duration(duration))
                                    : nlohmann::ordered_json()},
          {"exit_code",
           row.exit_code ? nlohmann::ordered_json(*row.exit_code) : nlohmann::ordered_json()}};
}

/// The runs whose records mount `spec` (NAME: any version; NAME@V: that one).
std::vector<std::string> runs_with_data(Context& ctx, HistoryStore& store,
                                        const std::string& spec) {
  const DataRequest request = parse_data_request(spec);
  std::string id;
  if (request.spec.find('@') != std::string::npos) {
    id = DataCatalog(ctx.project().state_dir()).resolve(request.spec).id;
  }
  const std::string name = request.spec.substr(0, request.spec.find('@'));
  std::vector<std::string> ids;
  for (const auto& row : store.list(RunQuery())) {
    try {
      const RunRecord record = store.load(row.run_id);
      if (std::any_of(record.data.begin(), record.data.end(), [&](const DataUse& use) {
            return use.name == name && (id.empty() || use.id == id);
          })) {
        ids.push_back(row.run_id);
      }
    } catch (const Error& e) {
      spdlog::debug("{}", e.what());
    }
  }
  return ids;
}

}  // namespace

void list_runs(Context& ctx, const RunQuery& asked, const std::string& data) {
  RunQuery query = asked;
  if (!query.status.empty()) {
    // In any case, as az's enumerations are (--status failed).
    const auto& all = status::all();
    const auto found = std::find_if(all.begin(), all.end(), [&](const auto& name) {
      return lower_ascii(name) == lower_ascii(query.status);
    });
    if (found == all.end()) {
      throw UsageError(fmt::format("--status must be one of {}{}", join(all, ", "),
                                   did_you_mean(query.status, all)));
    }
    query.status = *found;
  }
  if (query.top < 0) throw UsageError("--top must be 0 (all) or more");
  HistoryStore store = open_history(ctx);
  if (!data.empty()) query.run_ids = runs_with_data(ctx, store, data);
  const std::int64_t now = ctx.clock->now_ms();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  if (ctx.output().structured()) {
    // A run is one object everywhere (docs/cli.md "Output schema"): the record `info` shows.
    for (const auto& row : store.list(query)) {
      try {
        rows.push_back(store.load(row.run_id).to_public_json(store.run_dir(row.run_id).string()));
      } catch (const Error& e) {
        // One damaged record costs that run, not the list: a script still gets the others.
        spdlog::warn("{}; left out of the list", e.what());
      }
    }
    ctx.output().print_list(rows, {});
    return;
  }
  if (ctx.output_format == OutputFormat::Tsv) {
    // The run's one tsv line (as info and submit print it): durations in seconds, as in JSON.
    for (const auto& row : store.list(query)) {
      nlohmann::ordered_json line = summary_row(row, now);
      line["duration_s"] = row.start_ms && row.end_ms
                               ? nlohmann::ordered_json((row.end_ms - row.start_ms) / 1000.0)
                               : nlohmann::ordered_json();
      rows.push_back(line);
    }
    ctx.output().print_list(rows, run_tsv_columns());
    return;
  }
  std::vector<Column> columns = {{"run_id", "RUN ID"},     {"run_number", "#"},
                                 {"script", "SCRIPT"},     {"target", "TARGET"},
                                 {"status", "STATUS"},     {"created", "CREATED (UTC)"},
                                 {"duration", "DURATION"}, {"exit_code", "EXIT"}};
  for (const auto& field : query.columns) {
    columns.push_back({field.kind + ":" + field.name, field.name});
  }
  for (const auto& row : store.list(query)) {
    nlohmann::ordered_json line = summary_row(row, now);
    for (std::size_t i = 0; i < query.columns.size() && i < row.values.size(); ++i) {
      line[query.columns[i].kind + ":" + query.columns[i].name] = row.values[i];
    }
    rows.push_back(std::move(line));
  }
  ctx.output().print_list(rows, columns);
}

void show_run(Context& ctx, const std::optional<std::string>& run_id) {
  HistoryStore store = open_history(ctx);
  std::string id;
  if (run_id) {
    id = *run_id;
  } else {
    auto last = store.last_run_id();
    if (!last)
      throw Error(
          "this project has no runs yet; start one with: mlw experiment submit -c local train.py");
    id = *last;
  }
  const RunRecord record = store.load(id);
  nlohmann::ordered_json json = record.to_public_json(store.run_dir(id).string());
  if (ctx.output_format == OutputFormat::Tsv) {
    ctx.output().print_list(nlohmann::ordered_json::array({json}), run_tsv_columns());
    return;
  }
  if (ctx.output_format != OutputFormat::Table) {
    ctx.output().print_object(json);
    return;
  }
  json.erase("metrics");
  json.erase("system");
  if (!record.data.empty()) {
    std::vector<std::string> sets;
    for (const auto& use : record.data) {
      sets.push_back(fmt::format("{} ({}) at {}", use.label(), use.id.substr(0, 7), use.mount));
    }
    json["data"] = join(sets, ", ");
  }
  ctx.output().print_object(json);
  if (const auto lines = describe_system_use(record.system); !lines.empty()) {
    *ctx.out << "\n" << join(lines, "\n") << "\n";
  }
  const auto series = read_metric_series(store.run_dir(id) / "metrics.jsonl");
  if (series.empty()) return;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& [name, values] : series) {
    rows.push_back({{"metric", name},
                    {"last", values.back()},
                    {"points", values.size()},
                    {"trend", ctx.stdout_is_terminal ? sparkline(values) : ""}});
  }
  std::vector<Column> columns = {{"metric", "METRIC"}, {"last", "LAST"}, {"points", "POINTS"}};
  if (ctx.stdout_is_terminal) columns.push_back({"trend", "TREND"});
  *ctx.out << "\n";
  ctx.output().print_list(rows, columns);
}

/// A run on a target goes on there when the process that
/// supervised it is gone, or a batch system stopped answering (the record says Lost): following
/// it starts a new supervisor there, once (a lock in the run folder, held by that supervisor).
/// Opens and closes its own history connection, so none crosses the supervisor's fork. True when it
/// started one.
bool reattach_if_lost(Context& ctx, const std::string& run_id) {
  RunPlan plan;
  {
    HistoryStore store = open_history(ctx);
    plan.record = store.load(run_id);
    plan.run_dir = store.run_dir(run_id);
  }
  const std::string type = plan.record.target_type;
  const TargetKind* kind = find_kind(type);
  if (plan.record.status != status::k_lost || plan.record.host != host_name() || !kind ||
      !kind->runner.detached) {
    return false;
  }
  const int lock =
      ::open((plan.run_dir / "reattach.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return false;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{lock};
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) return false;  // another mlw is taking it over
  {
    HistoryStore store(ctx.project().state_dir());
    plan.record = store.load(run_id);
  }
  if (plan.record.status != status::k_lost) return false;
  plan.project = ctx.project();
  plan.target_name = plan.record.target;
  plan.compute = load_compute(plan.project, plan.target_name);
  plan.history_dir = plan.project.state_dir();
  if (plan.compute.type != type) {
    throw Error(
        fmt::format("run {} ran on a {} target, but aml_config/{}.compute is now {}: it "
                    "cannot be followed there",
                    run_id, type, plan.target_name, plan.compute.type));
  }
  ctx.executor(type)->reattach(ctx, plan);
  if (!ctx.quiet) {
    *ctx.err << fmt::format("Run {} had lost its supervisor; following it on {} again.\n", run_id,
                            plan.target_name);
  }
  // The new supervisor marks the run Running; until then the record still says Lost.
  for (int i = 0; i < 200; ++i) {
    if (HistoryStore(plan.history_dir).load(run_id).status != status::k_lost) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

/// True while another mlw holds the run's takeover lock: it is starting, or is, the run's new
/// supervisor, so a Lost record is about to change.
bool taken_over(const fs::path& run_dir) {
  const int fd = ::open((run_dir / "reattach.lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

void show_logs(Context& ctx, const std::string& run_id, bool follow) {
  if (follow) reattach_if_lost(ctx, run_id);
  std::optional<HistoryStore> store;
  store.emplace(open_history(ctx));
  RunRecord record = store->load(run_id);
  const fs::path log = store->run_dir(run_id) / "driver_log.txt";
  std::uint64_t offset = 0;
  char buffer[65536];
  using namespace std::chrono;
  auto last_check = steady_clock::now();
  auto lost_since = steady_clock::now();
  while (true) {
    const int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      while (true) {
        const ssize_t n = ::pread(fd, buffer, sizeof buffer, static_cast<off_t>(offset));
        if (n <= 0) break;
        ctx.out->write(buffer, n);
        offset += static_cast<std::uint64_t>(n);
      }
      ::close(fd);
      ctx.out->flush();
    }
    // A Lost run that another `logs -f` is taking over is followed on, not reported as Lost
    // (for at most 60 s while it stays Lost).
    bool resuming = false;
    if (follow && record.status == status::k_lost &&
        steady_clock::now() - lost_since < seconds(60)) {
      if (!taken_over(store->run_dir(run_id))) {  // nobody is on it: take it over here
        store.reset();
        reattach_if_lost(ctx, run_id);
        store.emplace(ctx.project().state_dir());
      }
      resuming = taken_over(store->run_dir(run_id)) || store->load(run_id).status != status::k_lost;
    }
    if (!follow || (status::is_final(record.status) && !resuming)) break;
    if (record.status != status::k_lost) lost_since = steady_clock::now();
    std::this_thread::sleep_for(milliseconds(100));
    if (steady_clock::now() - last_check > seconds(2)) {
      if (store->reconcile_lost(host_name()) > 0 && store->load(run_id).status == status::k_lost) {
        store.reset();
        reattach_if_lost(ctx, run_id);
        store.emplace(ctx.project().state_dir());
      }
      last_check = steady_clock::now();
    }
    // The final record is written after the log is closed: one more read after it shows final.
    record = store->load(run_id);
  }
  if (follow && !ctx.quiet) {
    *ctx.err << fmt::format(
        "Run {} is {}{}\n", run_id, record.status,
        record.exit_code ? fmt::format(" (exit code {})", *record.exit_code) : "");
  }
}

void download(Context& ctx, const std::string& run_id,
              const std::optional<std::string>& destination,
              const std::optional<std::string>& artifact) {
  HistoryStore store = open_history(ctx);
  const RunRecord record = store.load(run_id);
  const fs::path outputs = store.run_dir(run_id) / "outputs";
  std::vector<std::string> files = record.outputs;
  if (artifact) {
    const fs::path wanted = fs::path(*artifact).lexically_normal();
    std::string name = wanted.string();
    if (starts_with(name, "outputs/")) name = name.substr(8);
    if (wanted.is_absolute() || name.empty() || starts_with(name, "..")) {
      throw UsageError("--artifact must be a path inside the run's outputs/, e.g. model.pkl");
    }
    if (std::find(files.begin(), files.end(), name) == files.end()) {
      throw Error(fmt::format("run {} has no output \"{}\"{}; its outputs: {}", run_id, name,
                              did_you_mean(name, files),
                              files.empty() ? "none" : join(files, ", ")));
    }
    files = {name};
  }
  // By default into the project's outputs/ folder, which no run ships and the project's
  // .gitignore leaves out: results downloaded into the project would go with the next run.
  const fs::path target = destination ? fs::absolute(expand_user(*destination))
                                      : ctx.project().root / "outputs" / run_id;
  nlohmann::ordered_json copied = nlohmann::ordered_json::array();
  for (const auto& file : files) {
    const fs::path relative = fs::path(file).lexically_normal();
    if (relative.is_absolute() || starts_with(relative.string(), "..")) continue;
    const fs::path source = outputs / relative;
    if (fs::is_symlink(source) || !fs::is_regular_file(source)) continue;
    make_directories((target / relative).parent_path());
    std::error_code ec;
    fs::copy_file(source, target / relative, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error("cannot write " + (target / relative).string() + ": " + ec.message());
    copied.push_back((target / relative).string());
  }
  if (destination && !copied.empty()) keep_out_of_snapshots(ctx.project(), target);
  if (!destination) {
    spdlog::info(
        "{} file(s) in {} (outputs/ is not shipped with runs; -d DIR chooses another "
        "folder)",
        copied.size(), ctx.project().display(target));
  }
  ctx.output().print_object(
      {{"run_id", run_id}, {"destination", target.string()}, {"files", copied}});
}

void compare(Context& ctx, const std::vector<std::string>& run_ids) {
  if (run_ids.size() < 2) throw UsageError("compare needs at least two run ids");
  HistoryStore store = open_history(ctx);
  std::vector<RunRecord> records;
  std::vector<std::string> names;
  for (const auto& id : run_ids) {
    records.push_back(store.load(id));
    for (const auto& [name, value] : records.back().metrics.items()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<Column> columns = {{"field", "FIELD"}};
  for (const auto& record : records) columns.push_back({record.run_id, record.run_id});
  auto add_row = [&](const std::string& field, auto value_of) {
    nlohmann::ordered_json row = {{"field", field}};
    for (const auto& record : records) row[record.run_id] = value_of(record);
    rows.push_back(row);
  };
  add_row("status", [](const RunRecord& r) { return nlohmann::ordered_json(r.status); });
  add_row("script", [](const RunRecord& r) { return nlohmann::ordered_json(r.script); });
  add_row("arguments",
          [](const RunRecord& r) { return nlohmann::ordered_json(join(r.arguments, " ")); });
  add_row("duration", [](const RunRecord& r) {
    return r.end_ms ? nlohmann::ordered_json(format_duration(r.end_ms - r.start_ms))
                    : nlohmann::ordered_json();
  });
  for (const auto& name : names) {
    add_row(name, [&](const RunRecord& r) {
      return r.metrics.contains(name) ? r.metrics[name] : nlohmann::ordered_json();
    });
  }
  ctx.output().print_list(rows, columns);
}

}  // namespace mlw::api

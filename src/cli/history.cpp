#include <algorithm>

#include "cli/app.hpp"
#include "mlw/api/history.hpp"
#include "mlw/ui/server.hpp"

namespace mlw::cli {

namespace {

std::shared_ptr<std::string> add_run_option(CLI::App* command) {
  auto run_id = std::make_shared<std::string>();
  command->add_option("-r,--run", *run_id, "Run id")->required()->type_name("RUN_ID");
  return run_id;
}

}  // namespace

void register_history(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("history", "Look back at runs");
  group->require_subcommand(1);
  group->footer(examples(
      {"mlw history list --status Failed", "mlw history last -o json",
       "mlw history logs -r demo_1732200000000 -f", "mlw history ui --open",
       "mlw history list -o json | jq -r '.[] | select(.status == \"Failed\") | .run_id'"}));

  auto query = std::make_shared<RunQuery>();
  query->top = 50;
  auto* list = group->add_subcommand("list", "List runs, newest first");
  list->add_option("-c,--target", query->target, "Only runs on this compute target")
      ->type_name("TARGET");
  list->add_option("--status", query->status, "Only runs with this status (Completed, Failed, …)");
  list->add_option("--top", query->top, "At most N runs (default 50; 0 for all)")->type_name("N");
  list->add_option("--sweep", query->sweep_id, "Only the runs of this sweep, in point order")
      ->type_name("SWEEP_ID");
  auto fields = std::make_shared<std::vector<std::string>>();
  auto conditions = std::make_shared<std::vector<std::string>>();
  auto sort = std::make_shared<std::string>();
  auto data = std::make_shared<std::string>();
  list->add_option("--data", *data, "Only runs that mounted this data set (NAME or NAME@V)")
      ->type_name("NAME[@V]");
  list->add_option("--param", *fields,
                   "Show a parameter (or metric:NAME, a metric's last value) as a column")
      ->type_name("NAME")
      ->allow_extra_args(false);
  list->add_option("--where", *conditions, "Only runs where NAME OP VALUE holds (lr<0.1)")
      ->type_name("COND")
      ->allow_extra_args(false);
  list->add_option("--sort", *sort, "Sort by param:NAME or metric:NAME (:desc for largest first)")
      ->type_name("FIELD");
  list->footer(examples({"mlw history list", "mlw history list --status Failed --top 5",
                         "mlw history list --sweep demo_sweep_1732200000000 --param lr --param bs",
                         "mlw history list --where 'lr<0.1' --sort metric:loss",
                         "mlw history list -o tsv | cut -f1"}));
  list->callback([&ctx, query, fields, conditions, sort, data] {
    RunQuery asked = *query;
    for (const auto& field : *fields) asked.columns.push_back(api::parse_run_field(field));
    for (const auto& text : *conditions) asked.where.push_back(api::parse_run_condition(text));
    if (!sort->empty()) {
      std::string text = *sort;
      if (text.ends_with(":desc") || text.ends_with(":asc")) {
        asked.descending = text.ends_with(":desc");
        text = text.substr(0, text.rfind(':'));
      }
      asked.sort = api::parse_run_field(text);
      // Its column once, where --param did not already ask for it.
      const bool shown = std::any_of(
          asked.columns.begin(), asked.columns.end(),
          [&](const auto& c) { return c.kind == asked.sort->kind && c.name == asked.sort->name; });
      if (!shown) asked.columns.push_back(*asked.sort);
    }
    api::list_runs(ctx, asked, *data);
  });

  auto* last = group->add_subcommand("last", "Show the newest run");
  last->footer(examples({"mlw history last", "mlw history last -o json"}));
  last->callback([&ctx] { api::show_run(ctx, std::nullopt); });

  auto* info = group->add_subcommand("info", "Show a run's record and metrics");
  auto info_id = add_run_option(info);
  info->footer(examples({"mlw history info -r demo_1732200000000"}));
  info->callback([&ctx, info_id] { api::show_run(ctx, *info_id); });

  auto* logs = group->add_subcommand("logs", "Print a run's output (driver_log.txt)");
  auto logs_id = add_run_option(logs);
  auto follow = std::make_shared<bool>(false);
  logs->add_flag("-f,--follow", *follow, "Keep printing until the run ends");
  logs->footer(examples({"mlw history logs -r demo_1732200000000 -f"}));
  logs->callback([&ctx, logs_id, follow] { api::show_logs(ctx, *logs_id, *follow); });

  auto* download = group->add_subcommand("download", "Copy a run's outputs to a folder");
  auto download_id = add_run_option(download);
  auto destination = std::make_shared<std::optional<std::string>>();
  auto artifact = std::make_shared<std::optional<std::string>>();
  download->add_option_function<std::string>(
      "-d,--destination", [destination](const std::string& v) { *destination = v; },
      "Folder to copy into (default ./RUN_ID)");
  download->add_option_function<std::string>(
      "--artifact", [artifact](const std::string& v) { *artifact = v; },
      "Only this file of outputs/");
  download->footer(examples({"mlw history download -r demo_1732200000000 -d results",
                             "mlw history download -r demo_1732200000000 --artifact model.pkl"}));
  download->callback([&ctx, download_id, destination, artifact] {
    api::download(ctx, *download_id, *destination, *artifact);
  });

  auto ids = std::make_shared<std::vector<std::string>>();
  auto* compare = group->add_subcommand("compare", "Show runs' metrics side by side");
  auto compare_sweep = std::make_shared<std::string>();
  auto compare_sort = std::make_shared<std::optional<std::string>>();
  compare->add_option("runs", *ids, "Two or more run ids")->expected(0, 1000)->type_name("RUN_ID");
  compare
      ->add_option("--sweep", *compare_sweep, "A sweep's runs, best first, parameters as columns")
      ->type_name("SWEEP_ID");
  compare->add_option_function<std::string>(
      "--sort", [compare_sort](const std::string& v) { *compare_sort = v; },
      "With --sweep: rank by metric:NAME (:max for largest first; default the sweep's metric)");
  compare->footer(examples({"mlw history compare demo_1732200000000 demo_1732200050000",
                            "mlw history compare --sweep demo_sweep_1732200000000"}));
  compare->callback([&ctx, ids, compare_sweep, compare_sort] {
    if (!compare_sweep->empty()) {
      if (!ids->empty()) throw UsageError("give run ids or --sweep, not both");
      api::compare_sweep(ctx, *compare_sweep, *compare_sort);
      return;
    }
    if (compare_sort->has_value()) throw UsageError("--sort goes with --sweep");
    api::compare(ctx, *ids);
  });

  auto pair = std::make_shared<std::vector<std::string>>();
  auto* diff = group->add_subcommand(
      "diff", "Show what differs between two runs: files, packages, arguments, target, image");
  diff->add_option("-r,--run", *pair, "A run (give two)")->required()->type_name("RUN_ID");
  diff->footer("\nPrints nothing when the runs do not differ; exits 0 either way.\n" +
               examples({"mlw history diff -r demo_1732200000000 -r demo_1732200050000",
                         "mlw -o json history diff -r demo_1732200000000 -r demo_1732200050000"}));
  diff->callback([&ctx, pair] {
    if (pair->size() != 2) throw UsageError("give two runs: -r RUN1 -r RUN2");
    api::diff_runs(ctx, (*pair)[0], (*pair)[1]);
  });

  auto dashboard = std::make_shared<ui::UiOptions>();
  auto* serve = group->add_subcommand(
      "ui", "Serve a dashboard of the runs (charts, logs, compare) to a browser until Ctrl-C");
  serve
      ->add_option("--port", dashboard->port,
                   "Port to listen on (default: the first free of 8717-8726; 0: any free port)")
      ->type_name("PORT");
  serve
      ->add_option("--host", dashboard->host,
                   "Address to listen on (default 127.0.0.1, this machine only)")
      ->type_name("ADDRESS");
  serve->add_flag("--open", dashboard->open, "Open the dashboard in a browser (xdg-open)");
  serve->footer(examples({"mlw history ui", "mlw history ui --port 0 --open",
                          "mlw history ui --host 0.0.0.0 --port 8717"}));
  serve->callback([&ctx, dashboard] { ui::history_ui(ctx, *dashboard); });
}

}  // namespace mlw::cli

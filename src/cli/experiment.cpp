#include "mlw/api/experiment.hpp"
#include "cli/app.hpp"
#include "cli/help.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::cli {

namespace {

/// submit takes its script and the script's arguments unparsed; say so in its usage line.
class SubmitFormatter : public HelpFormatter {
 public:
  using HelpFormatter::HelpFormatter;
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: mlw experiment submit [-c NAME] [OPTIONS] SCRIPT [ARGS...]\n";
  }
};

/// sweep takes its script and the script's arguments (with their lists) unparsed.
class SweepFormatter : public HelpFormatter {
 public:
  using HelpFormatter::HelpFormatter;
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: mlw experiment sweep -c NAME[,NAME...] [-f SWEEP.yml] [OPTIONS] SCRIPT\n"
           "                            [--PARAM V1,V2,... | ARGS...]\n"
           "       mlw experiment sweep --resume SWEEP_ID [-a]\n";
  }
};

void register_sweep(CLI::App& group, Context& ctx, GlobalOptions& globals) {
  auto request = std::make_shared<api::SweepRequest>();
  auto* sweep = group.add_subcommand(
      "sweep", "Run a script once per point of a parameter grid or random search");
  sweep
      ->add_option_function<std::string>(
          "-c,--run-configuration",
          [request](const std::string& v) {
            for (const auto& name : split(v, ',')) {
              if (!name.empty()) request->run_configs.push_back(name);
            }
          },
          "Run configurations whose targets take the points, comma-separated")
      ->type_name("NAME[,NAME...]");
  sweep->add_option_function<std::string>(
      "-f,--file", [request](const std::string& v) { request->file = v; },
      "Sweep file (method, count, seed, maxConcurrent, metric, parameters, earlyStop)");
  sweep
      ->add_option_function<std::string>(
          "--resume", [request](const std::string& v) { request->resume = v; },
          "Run again the points of SWEEP_ID that did not complete")
      ->type_name("SWEEP_ID");
  sweep->add_flag("-a,--async", request->async, "Return once the points are queued");
  sweep->add_option("--max-runs", request->max_runs, "Accept up to N points (default 10000)")
      ->type_name("N");
  sweep->add_option("--max-concurrent", request->max_concurrent, "At most N runs at once")
      ->type_name("N");
  sweep->add_option("-e,--env", request->env, "Set an environment variable in every run")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  sweep
      ->add_option("--metric", request->metric,
                   "The metric that ranks the trials (:max: higher is better)")
      ->type_name("NAME[:max]");
  sweep->add_option("--search", request->search, "How points are chosen: grid, random or tpe")
      ->type_name("METHOD");
  sweep->add_option("--count", request->count, "random, tpe: how many points")->type_name("N");
  sweep->add_option("--startup", request->startup, "tpe: random points before it learns (10)")
      ->type_name("N");
  sweep->add_option("--seed", request->seed, "random, tpe: the seed (recorded)")->type_name("N");
  sweep->add_option("--scheduler", request->scheduler, "Judge trials at rungs: asha or hyperband")
      ->type_name("KIND");
  sweep
      ->add_option("--resource", request->resource,
                   "The scheduler's budget: each trial gets --NAME MAX and logs it as step")
      ->type_name("NAME");
  sweep->add_option("--min", request->min_budget, "The scheduler's first rung (default 1)")
      ->type_name("N");
  sweep->add_option("--max", request->max_budget, "A trial's whole budget")->type_name("N");
  sweep->add_option("--eta", request->eta, "The top 1/N of a rung go on (default 3)")
      ->type_name("N");
  add_global_options(*sweep, globals);
  sweep->prefix_command();
  sweep->formatter(std::make_shared<SweepFormatter>(group, help_width()));
  sweep->fallthrough(false);
  sweep->footer(
      "\nAfter SCRIPT, an option whose value has commas is swept (--lr 0.1,0.01); the other "
      "words are passed to every run unchanged. docs/sweeps.md has the sweep file.\n" +
      examples({"mlw experiment sweep -c local train.py --lr 0.1,0.01,0.001 --bs 32,64",
                "mlw experiment sweep -a -c gpu1,gpu2 -f sweep.yml train.py --epochs 10",
                "mlw experiment sweep -c local --metric loss --scheduler asha --resource epochs "
                "--min 1 --max 81 train.py --lr 0.1,0.01,0.001",
                "mlw experiment sweep --resume demo_sweep_1732200000000",
                "mlw history compare --sweep demo_sweep_1732200000000"}));
  sweep->callback([&ctx, request, sweep] {
    ctx.codes = CommandCodes::Submit;
    auto words = sweep->remaining();
    if (request->resume) {
      if (!words.empty()) throw UsageError("--resume takes the sweep's own script and arguments");
    } else {
      if (words.empty()) {
        throw UsageError("no script given: mlw experiment sweep -c NAME SCRIPT [--PARAM V1,V2]");
      }
      if (words.front().size() > 1 && words.front()[0] == '-') {
        throw UsageError("unknown option " + words.front() +
                         " for sweep; its options go before the script");
      }
      request->script = words.front();
      request->arguments.assign(words.begin() + 1, words.end());
    }
    ctx.exit_status = api::sweep(ctx, *request);
  });
}

/// A subcommand that takes one required `-c NAME` (a run configuration) and hands it to `run`.
CLI::App* add_target_command(CLI::App& group, const std::string& name, const std::string& about,
                             const char* example, std::function<void(const std::string&)> run) {
  auto value = std::make_shared<std::string>();
  auto* command = group.add_subcommand(name, about);
  command->add_option("-c,--run-configuration", *value, "Run configuration")
      ->required()
      ->type_name("NAME");
  command->footer(examples({example}));
  command->callback([value, run = std::move(run)] { run(*value); });
  return command;
}

/// `experiment rerun -r RUN [-c NAME] [-a] [-e K=V]... [-- ARGS...]`.
void register_rerun(CLI::App& group, Context& ctx) {
  auto request = std::make_shared<api::RerunRequest>();
  auto words = std::make_shared<std::vector<std::string>>();
  auto* rerun = group.add_subcommand(
      "rerun", "Run a past run again from its stored snapshot, here or on another target");
  rerun->add_option("-r,--run", request->run_id, "The run to rerun")
      ->required()
      ->type_name("RUN_ID");
  rerun->add_option_function<std::string>(
      "-c,--run-configuration", [request](const std::string& v) { request->where = v; },
      "Run it on this target (or this run configuration's target) instead of its own");
  rerun->add_flag("-a,--async", request->async, "Return as soon as the run has started");
  rerun->add_option("-e,--env", request->env, "Set or change an environment variable (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  rerun->add_flag("--cancel-on-interrupt", request->cancel_on_interrupt,
                  "Ctrl-C cancels the run (default: detaches, the run goes on)");
  rerun
      ->add_option("arguments", *words,
                   "After --: new arguments for the script (replace the run's)")
      ->type_name("ARGS");
  rerun->footer(
      "\nThe script, its arguments, -e variables, run configuration and conda file are the run's "
      "as it stored them, whatever the project holds today.\n" +
      examples({"mlw experiment rerun -r demo_1732200000000",
                "mlw experiment rerun -r demo_1732200000000 -c my_dsvm -- --epochs 20"}));
  rerun->callback([&ctx, request, words, rerun] {
    ctx.codes = CommandCodes::Submit;
    if (rerun->count("arguments") > 0) request->arguments = *words;
    ctx.exit_status = api::rerun(ctx, *request);
  });
}

/// `experiment shell -r RUN [-t|-T] [-- COMMAND...]`.
void register_shell(CLI::App& group, Context& ctx) {
  auto run_id = std::make_shared<std::string>();
  auto words = std::make_shared<std::vector<std::string>>();
  auto force = std::make_shared<bool>(false);
  auto never = std::make_shared<bool>(false);
  auto* shell = group.add_subcommand(
      "shell", "Open a shell, or run a command, inside a running run on its target");
  shell->add_option("-r,--run", *run_id, "The running run")->required()->type_name("RUN_ID");
  auto* tty = shell->add_flag("-t,--tty", *force, "A terminal on the target for a command too");
  shell->add_flag("-T,--no-tty", *never, "No terminal on the target, even for a shell")
      ->excludes(tty);
  shell->add_option("command", *words, "After --: the command to run there (default: a shell)")
      ->type_name("COMMAND");
  shell->footer(
      "\nInside the run's container (docker exec), or with its script's variables in its folder; "
      "MLW_RUN_ID and the run's GPUs are set. The exit code is the command's (125: the run could "
      "not be entered).\n" +
      examples({"mlw experiment shell -r demo_1732200000000",
                "mlw experiment shell -r demo_1732200000000 -- nvidia-smi"}));
  shell->callback([&ctx, run_id, words, force, never] {
    const api::TtyChoice choice = *force   ? api::TtyChoice::Force
                                  : *never ? api::TtyChoice::Never
                                           : api::TtyChoice::Auto;
    ctx.exit_status = api::shell(ctx, *run_id, *words, choice);
  });
}

void register_forward(CLI::App& group, Context& ctx) {
  auto run_id = std::make_shared<std::string>();
  auto ports = std::make_shared<std::vector<std::string>>();
  auto* forward = group.add_subcommand(
      "forward", "Reach ports of a running run on this machine (127.0.0.1) until it ends");
  forward->add_option("-r,--run", *run_id, "The running run")->required()->type_name("RUN_ID");
  forward
      ->add_option("ports", *ports,
                   "The run's port, and where to hear it here (default: the same port; 0: any "
                   "free one)")
      ->required()
      ->type_name("PORT[:LOCAL]");
  forward->footer(
      "\nListens on 127.0.0.1 only and carries each connection over the target's SSH login "
      "(direct-tcpip, through its ProxyJump), into the run's container through docker exec. "
      "Prints each URL; ends when the run ends or on Ctrl-C.\n" +
      examples({"mlw experiment forward -r demo_1732200000000 6006",
                "mlw experiment forward -r demo_1732200000000 8888:18888 6006:0"}));
  forward->callback([&ctx, run_id, ports] {
    ctx.exit_status = api::forward(ctx, *run_id, api::parse_ports(*ports));
  });
}

}  // namespace

void register_experiment(CLI::App& app, Context& ctx, GlobalOptions& globals) {
  auto* group = app.add_subcommand("experiment", "Submit, cancel, prepare and clean runs");
  group->footer(examples({"mlw experiment submit -c local train.py --epochs 3",
                          "mlw experiment submit -a -c my_dsvm train.py",
                          "mlw experiment cancel -r demo_1732200000000"}));
  group->require_subcommand(1);

  auto request = std::make_shared<api::SubmitRequest>();
  auto* submit = group->add_subcommand("submit", "Run a script on a compute target and record it");
  submit
      ->add_option("-c,--run-configuration", request->run_config,
                   "Run configuration (aml_config/NAME.runconfig; default: mlw config get "
                   "defaults.target)")
      ->type_name("NAME");
  submit->add_option_function<std::string>(
      "-t,--target", [request](const std::string& v) { request->target = v; },
      "Compute target (default: the run configuration's Target)");
  submit->add_flag("-a,--async", request->async, "Return as soon as the run has started");
  submit
      ->add_option("-e,--env", request->env, "Set an environment variable in the run (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  submit
      ->add_option_function<std::string>(
          "--gpus", [request](const std::string& v) { request->gpus = v; },
          "GPUs for this run, leased on the target so that runs share it (overrides gpusPerRun; "
          "Slurm: GPUs per node; Grid Engine: the gpu resource)")
      ->type_name("N");
  submit
      ->add_option("--data", request->data,
                   "Mount a data set's version read-only (repeatable; mlw data; default mount "
                   "/mlw/data/NAME, path in $MLW_DATA_NAME)")
      ->type_name("NAME[@V][:MOUNT]")
      ->allow_extra_args(false);
  submit
      ->add_option_function<std::string>(
          "--idle-gpu", [request](const std::string& v) { request->idle_gpu = v; },
          "Warn about or stop this run when its leased GPUs stay below a utilisation (idleGpu, "
          "docs/gpus.md)")
      ->type_name("below=5,minutes=30,action=warn|stop");
  submit
      ->add_option("--forward", request->forward,
                   "Reach this port of the run on 127.0.0.1 here while submit follows it "
                   "(repeatable; as experiment forward)")
      ->type_name("PORT[:LOCAL]")
      ->allow_extra_args(false);
  submit->add_flag("--requeue", request->requeue,
                   "Slurm, Grid Engine: requeue the job after its checkpoint signal (the compute "
                   "key requeue: true, for this run)");
  submit->add_flag("--cancel-on-interrupt", request->cancel_on_interrupt,
                   "Ctrl-C cancels the run (default: detaches, the run goes on)");
  // Everything after SCRIPT is the script's, so submit does not fall through to mlw's own
  // options: it takes them itself, anywhere before SCRIPT (as az takes its global options).
  add_global_options(*submit, globals);
  submit->prefix_command();
  submit->formatter(std::make_shared<SubmitFormatter>(app, help_width()));
  submit->fallthrough(false);
  submit->footer(
      "\nOptions go before SCRIPT; everything after SCRIPT is passed to it unchanged.\n"
      "Exit code: the script's (128+N when killed by signal N), 125 when mlw could not start "
      "the run, 126 when the script cannot be executed, 127 when it or python is missing.\n" +
      examples({"mlw experiment submit -c local train.py --epochs 10",
                "mlw experiment submit -c local -e SEED=1 -a train.py",
                "mlw -o json experiment submit -c local train.py > run.json"}));
  submit->callback([&ctx, request, submit] {
    ctx.codes = CommandCodes::Submit;  // a usage error of submit is 125, as docker run
    auto words = submit->remaining();
    if (words.empty())
      throw UsageError("no script given: mlw experiment submit -c NAME SCRIPT [ARGS...]");
    if (words.front().size() > 1 && words.front()[0] == '-') {
      throw UsageError("unknown option " + words.front() +
                       " for submit; its options and mlw's global options go before the script");
    }
    request->script = words.front();
    request->arguments.assign(words.begin() + 1, words.end());
    ctx.exit_status = api::submit(ctx, *request);
  });

  register_sweep(*group, ctx, globals);
  register_rerun(*group, ctx);
  register_shell(*group, ctx);
  register_forward(*group, ctx);

  auto cancel_id = std::make_shared<std::string>();
  auto* cancel = group->add_subcommand(
      "cancel", "Stop a running run (or every run of a sweep) and record it as Canceled");
  cancel->add_option("-r,--run", *cancel_id, "Run id or sweep id")->required()->type_name("RUN_ID");
  cancel->footer(examples({"mlw experiment cancel -r demo_1732200000000",
                           "mlw experiment cancel -r demo_sweep_1732200000000"}));
  cancel->callback([&ctx, cancel_id] { api::cancel(ctx, *cancel_id); });

  auto diag_id = std::make_shared<std::string>();
  auto diag_file = std::make_shared<std::optional<std::string>>();
  auto* diag = group->add_subcommand(
      "diagnostics", "Zip a run's record, logs, configuration and its target's checks for support");
  diag->add_option("-r,--run", *diag_id, "The run")->required()->type_name("RUN_ID");
  diag->add_option_function<std::string>(
          "--file", [diag_file](const std::string& v) { *diag_file = v; },
          "Where to write the zip (default: ./RUN_ID-diagnostics.zip)")
      ->type_name("FILE.zip");
  diag->footer(
      "\nPasswords, passphrases, tokens and EnvironmentVariables' values are replaced by ***.\n" +
      examples({"mlw experiment diagnostics -r demo_1732200000000",
                "mlw experiment diagnostics -r demo_1732200000000 --file /tmp/support.zip"}));
  diag->callback([&ctx, diag_id, diag_file] { api::diagnostics(ctx, *diag_id, *diag_file); });

  auto queue_name = std::make_shared<std::optional<std::string>>();
  auto* queue = group->add_subcommand(
      "queue", "Show the runs that hold and wait for GPUs (or run slots) on targets");
  queue
      ->add_option_function<std::string>(
          "-c,--run-configuration", [queue_name](const std::string& v) { *queue_name = v; },
          "Run configuration or target (default: every target that leases)")
      ->type_name("NAME");
  queue->footer(examples({"mlw experiment queue", "mlw experiment queue -c my_dsvm -o json"}));
  queue->callback([&ctx, queue_name] { api::queue(ctx, *queue_name); });

  add_target_command(*group, "prepare",
                     "Ship the project and build the target's environment image ahead of a run",
                     "mlw experiment prepare -c my_dsvm",
                     [&ctx](const std::string& name) { api::prepare(ctx, name); });
  auto all_projects = std::make_shared<bool>(false);
  add_target_command(
      *group, "clean", "Remove this project's images and finished run folders from a target",
      "mlw experiment clean -c my_dsvm",
      [&ctx, all_projects](const std::string& name) { api::clean(ctx, name, *all_projects); })
      ->add_flag("--all-projects", *all_projects,
                 "Every project's images and run folders there, and the shared content store");
}

}  // namespace mlw::cli

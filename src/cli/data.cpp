#include "mlw/api/data.hpp"
#include "cli/app.hpp"

namespace mlw::cli {

namespace {

/// Adds `-c,--target` (required) to a command.
void add_target(CLI::App* command, std::string& target) {
  command->add_option("-c,--target", target, "The compute target (aml_config/NAME.compute)")
      ->type_name("TARGET")
      ->required();
}

}  // namespace

void register_data(CLI::App& app, Context& ctx) {
  auto* group =
      app.add_subcommand("data", "Data sets: versions of folders, moved once per machine");
  group->footer(examples({"mlw data add imagenet ~/datasets/imagenet -m 'first cut'",
                          "mlw data push imagenet -c my_dsvm",
                          "mlw experiment submit -c my_dsvm --data imagenet@1 train.py"}));
  group->require_subcommand(1);

  struct Args {
    std::string name, path, message, spec, target;
    std::optional<std::string> maybe_name, maybe_spec, maybe_target;
  };
  auto args = std::make_shared<Args>();

  auto* add = group->add_subcommand("add", "Record a version of a folder (nothing is copied)");
  add->add_option("NAME", args->name, "The data set's name")->required();
  add->add_option("PATH", args->path, "The folder")->required();
  add->add_option("-m,--message", args->message, "What this version is");
  add->footer(examples({"mlw data add imagenet ~/datasets/imagenet -m 'train + val'"}));
  add->callback([&ctx, args] { api::data_add(ctx, args->name, args->path, args->message); });

  auto* list = group->add_subcommand("list", "The data sets' versions");
  list->add_option_function<std::string>(
      "NAME", [args](const std::string& v) { args->maybe_name = v; }, "Only this data set");
  list->callback([&ctx, args] { api::data_list(ctx, args->maybe_name); });

  auto* show = group->add_subcommand("show", "A version's files, size and the targets holding it");
  show->add_option("NAME[@V]", args->spec, "NAME (its newest version), NAME@N or NAME@ID")
      ->required();
  show->callback([&ctx, args] { api::data_show(ctx, args->spec); });

  auto* push = group->add_subcommand("push", "Send a version to a target's store (what it lacks)");
  push->add_option("NAME[@V]", args->spec, "NAME (its newest version), NAME@N or NAME@ID")
      ->required();
  add_target(push, args->target);
  push->footer(
      examples({"mlw data push imagenet -c my_dsvm", "mlw data push imagenet@2 -c slurm"}));
  push->callback([&ctx, args] { api::data_push(ctx, args->spec, args->target); });

  auto* verify = group->add_subcommand(
      "verify", "Check a target's stored files by their hashes (changed ones are removed)");
  verify->add_option_function<std::string>(
      "NAME[@V]", [args](const std::string& v) { args->maybe_spec = v; },
      "Only this version (default: every version the target holds)");
  add_target(verify, args->target);
  verify->callback([&ctx, args] { api::data_verify(ctx, args->target, args->maybe_spec); });

  auto* du = group->add_subcommand("du", "The versions a target holds and the room they take");
  add_target(du, args->target);
  du->callback([&ctx, args] { api::data_du(ctx, args->target); });

  auto* rm = group->add_subcommand(
      "rm", "Forget a version, or with -c remove it from a target (not while a run uses it)");
  rm->add_option("NAME@V", args->spec, "The version")->required();
  rm->add_option_function<std::string>(
        "-c,--target", [args](const std::string& v) { args->maybe_target = v; },
        "Remove the target's copy instead")
      ->type_name("TARGET");
  rm->callback([&ctx, args] { api::data_rm(ctx, args->spec, args->maybe_target); });

  auto* gc =
      group->add_subcommand("gc", "Remove from a target's store what no version held there needs");
  add_target(gc, args->target);
  gc->callback([&ctx, args] { api::data_gc(ctx, args->target); });
}

}  // namespace mlw::cli

#include "mlw/api/computetarget.hpp"
#include "cli/app.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mlw/config/compute_file.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/error.hpp"

namespace mlw::cli {

namespace {

/// Adds the options of `attach` to `command` (a typed subcommand, or attach itself for the
/// pre-December-2017 form with --type); returns them, for the check that the two forms are not
/// mixed.
std::vector<CLI::Option*> add_attach_options(CLI::App* command, api::AttachRequest& request,
                                             const AttachOptionSet& set,
                                             const std::vector<const OwnKey*>& own) {
  std::vector<CLI::Option*> added;
  added.push_back(
      command->add_option("-n,--name", request.name, "Target name (letters, digits, _ and -)"));
  auto optional = [&](const std::string& flags, std::optional<std::string>& target,
                      const std::string& help) {
    added.push_back(command->add_option_function<std::string>(
        flags, [&target](const std::string& v) { target = v; }, help));
  };
  auto flag = [&](const std::string& flags, bool& target, const std::string& help) {
    added.push_back(command->add_flag(flags, target, help));
  };
  if (set.remote) {
    optional("-a,--address", request.address,
             "host, host:port, [v6addr]:port or an ~/.ssh/config alias");
    optional("-u,--username", request.username, "SSH user (default: you)");
    // Two options, so that the warning names the one that was typed.
    for (const char* name : {"-w", "--password"}) {
      added.push_back(command
                          ->add_option_function<std::string>(
                              name,
                              [&request, name](const std::string& v) {
                                request.password = v;
                                request.password_option = name;
                              },
                              "SSH password (shows in the process list; prefer --password-stdin)")
                          ->type_name("PASSWORD"));
    }
    flag("--password-stdin", request.password_stdin, "Read the SSH password from standard input");
    optional("--private-key-file", request.private_key_file, "SSH private key to log in with");
    optional("--private-key-passphrase", request.private_key_passphrase,
             "Passphrase of that key (kept in your secret store)");
    flag("-k,--use-ssh-key,--use-azureml-ssh-key", request.use_ssh_key,
         "Make an ed25519 key pair for the target, install it there over the password login, "
         "and keep no password");
    flag("--accept-host-key", request.accept_host_key,
         "Trust and record an unknown host key without asking");
    flag("--no-connect", request.no_connect,
         "Write the files without connecting (checked at the first submit)");
  }
  if (set.docker) {
    optional("--base-image", request.base_image, "Base Docker image (default python:3.11-slim)");
    flag("--nvidia-docker", request.nvidia_docker, "Run the container with the GPUs");
  }
  if (set.python) {
    optional("--python", request.python_location, "Python interpreter (default python3)");
  }
  // The options of the keys the kind owns, each kept under its key's name.
  for (const OwnKey* key : own) {
    const std::string name(key->name);
    added.push_back(command->add_option_function<std::string>(
        std::string(key->attach_flag),
        [&request, name](const std::string& v) { request.own[name] = v; },
        std::string(key->attach_help)));
  }
  flag("--force", request.force, "Replace an existing target of that name, keeping its settings");
  return added;
}

/// `attach TYPE -n NAME …` (the form since December 2017), and `attach --type TYPE --name NAME …`
/// (the form before it, still in the translated guides): both do the same.
void register_attach(CLI::App* group, Context& ctx) {
  auto* attach = group->add_subcommand(
      "attach",
      "Write aml_config/NAME.compute and NAME.runconfig (attach TYPE -n NAME …, or the "
      "2017 form attach --type TYPE --name NAME …)");
  attach->require_subcommand(0, 1);
  auto legacy = std::make_shared<api::AttachRequest>();
  auto legacy_type = attach->add_option("--type", legacy->type,
                                        "The target type, in the pre-December-2017 form of attach");
  // The 2017 form offers every option: each kind's own ones once (two kinds may share a flag).
  std::vector<const OwnKey*> all_own;
  for (const TargetKind* row : target_kinds()) {
    for (const OwnKey& key : row->own_keys) {
      if (key.attach_flag.empty()) continue;
      const bool seen = std::any_of(all_own.begin(), all_own.end(), [&](const OwnKey* k) {
        return k->attach_flag == key.attach_flag;
      });
      if (!seen) all_own.push_back(&key);
    }
  }
  auto legacy_options = std::make_shared<std::vector<CLI::Option*>>(add_attach_options(
      attach, *legacy, {.remote = true, .docker = true, .python = true}, all_own));
  legacy_options->push_back(legacy_type);
  for (const TargetKind* row : target_kinds()) {
    const std::string kind(row->name);
    auto request = std::make_shared<api::AttachRequest>();
    request->type = kind;
    auto* command = attach->add_subcommand(kind, "Attach a " + kind + " target");
    std::vector<const OwnKey*> own;
    for (const OwnKey& key : row->own_keys) {
      if (!key.attach_flag.empty()) own.push_back(&key);
    }
    add_attach_options(command, *request, row->attach, own).front()->required();
    command->footer(examples(row->attach_examples));
    command->callback([&ctx, request, legacy_options, kind] {
      // An option this type does not have reaches attach's own (2017) options: refuse it.
      for (const CLI::Option* option : *legacy_options) {
        if (option->count() > 0) {
          throw UsageError(
              fmt::format("{} is not an option of attach {}; see: mlw computetarget "
                          "attach {} --help",
                          option->get_name(), kind, kind));
        }
      }
      api::attach(ctx, *request);
    });
  }
  attach->callback([&ctx, attach, legacy] {
    if (!attach->get_subcommands().empty()) return;
    if (legacy->type.empty()) {
      throw UsageError(
          fmt::format("attach needs a target type: mlw computetarget attach {} -n NAME … (or the "
                      "2017 form: attach --type TYPE --name NAME …)",
                      kind_names("|")));
    }
    if (legacy->name.empty()) throw UsageError("--name is required");
    api::attach(ctx, *legacy);
  });
  attach->footer(examples({"mlw computetarget attach local -n mylocal",
                           "mlw computetarget attach remotedocker -n my_dsvm -a vm.example.com -u "
                           "me --password-stdin",
                           "mlw computetarget attach --name my_dsvm --address vm.example.com "
                           "--username me --password-stdin --type remotedocker"}));
}

}  // namespace

void register_computetarget(CLI::App& app, Context& ctx) {
  auto* group =
      app.add_subcommand("computetarget", "Attach, list, show, check and detach compute targets");
  group->require_subcommand(1);
  group->footer(examples({"mlw computetarget attach docker -n docker --base-image python:3.11",
                          "mlw computetarget list -o json | jq -r '.[].name'",
                          "mlw computetarget doctor -n my_dsvm"}));
  register_attach(group, ctx);

  auto* list = group->add_subcommand("list", "List the project's compute targets");
  list->footer(examples({"mlw computetarget list", "mlw computetarget list -o json"}));
  list->callback([&ctx] { api::list_targets(ctx); });

  auto show_name = std::make_shared<std::string>();
  auto* show = group->add_subcommand("show", "Show a compute target's settings");
  show->add_option("-n,--name", *show_name, "Target name")->required();
  show->footer(
      examples({"mlw computetarget show -n local", "mlw -o yaml computetarget show -n docker"}));
  show->callback([&ctx, show_name] { api::show_target(ctx, *show_name); });

  auto doctor_name = std::make_shared<std::string>();
  auto* doctor = group->add_subcommand(
      "doctor", "Check a target: address, host key, login, docker, NVIDIA runtime, GPUs, disk");
  doctor->add_option("-n,--name", *doctor_name, "Target name")->required();
  doctor->footer(
      examples({"mlw computetarget doctor -n my_dsvm", "mlw computetarget doctor -n local"}));
  doctor->callback([&ctx, doctor_name] {
    if (api::doctor(ctx, *doctor_name) > 0) ctx.exit_status = exit_code::k_failure;
  });

  auto gpus_name = std::make_shared<std::string>();
  auto gpus_watch = std::make_shared<bool>(false);
  auto* gpus = group->add_subcommand(
      "gpus",
      "Every GPU of a target's machine: its use, the run and user that lease it, idle time");
  gpus->add_option("-c,-n,--name", *gpus_name, "Target (or run configuration) name")->required();
  gpus->add_flag("--watch", *gpus_watch, "Show it again every 2 s until Ctrl-C");
  gpus->footer(
      examples({"mlw computetarget gpus -c my_dsvm", "mlw computetarget gpus -c my_dsvm --watch",
                "mlw -o json computetarget gpus -c my_dsvm"}));
  gpus->callback([&ctx, gpus_name, gpus_watch] { api::gpus(ctx, *gpus_name, *gpus_watch); });

  auto detach_name = std::make_shared<std::string>();
  auto* detach = group->add_subcommand(
      "detach", "Remove a compute target, its run configuration and its stored secrets");
  detach->add_option("-n,--name", *detach_name, "Target name")->required();
  detach->footer(examples({"mlw computetarget detach -n my_dsvm"}));
  detach->callback([&ctx, detach_name] { api::detach(ctx, *detach_name); });
}

}  // namespace mlw::cli

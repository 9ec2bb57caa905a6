#include "mlw/api/computetarget.hpp"
#include "cli/app.hpp"

namespace mlw::cli {

namespace {

void add_optional(CLI::App* command, const std::string& flags, std::optional<std::string>& target,
                  const std::string& help) {
  command->add_option_function<std::string>(
      flags, [&target](const std::string& v) { target = v; }, help);
}

void add_optional_int(CLI::App* command, const std::string& flags, std::optional<int>& target,
                      const std::string& help) {
  command->add_option_function<int>(
      flags, [&target](int v) { target = v; }, help);
}

}  // namespace

void register_computetarget(CLI::App& app, Context& ctx) {
  auto* group =
      app.add_subcommand("computetarget", "Attach, list, show, check and detach compute targets");
  group->require_subcommand(1);

  auto* attach =
      group->add_subcommand("attach", "Write aml_config/NAME.compute and NAME.runconfig");
  attach->require_subcommand(1);
  for (const char* type : {"local", "docker", "remotedocker", "remote", "slurm"}) {
    auto request = std::make_shared<api::AttachRequest>();
    request->type = type;
    auto* command = attach->add_subcommand(type, std::string("Attach a ") + type + " target");
    command->add_option("-n,--name", request->name, "Target name (letters, digits, _ and -)")
        ->required();
    const bool remote = std::string(type) == "remotedocker" || std::string(type) == "remote" ||
                        std::string(type) == "slurm";
    if (remote) {
      add_optional(command, "-a,--address", request->address,
                   "host, host:port, [v6addr]:port or an ~/.ssh/config alias");
      add_optional(command, "-u,--username", request->username, "SSH user (default: you)");
      add_optional(command, "-w,--password", request->password,
                   "SSH password (shows in the process list; prefer --password-stdin)");
      command->add_flag("--password-stdin", request->password_stdin,
                        "Read the SSH password from standard input");
      add_optional(command, "--private-key-file", request->private_key_file,
                   "SSH private key to log in with");
      add_optional(command, "--private-key-passphrase", request->private_key_passphrase,
                   "Passphrase of that key (kept in your secret store)");
      command->add_flag("-k,--use-ssh-key", request->use_ssh_key,
                        "Make an ed25519 key pair for the target, install it there over the "
                        "password login, and keep no password");
      command->add_flag("--accept-host-key", request->accept_host_key,
                        "Trust and record an unknown host key without asking");
      command->add_flag("--no-connect", request->no_connect,
                        "Write the files without connecting (checked at the first submit)");
    }
    if (std::string(type) == "docker" || std::string(type) == "remotedocker") {
      add_optional(command, "--base-image", request->base_image,
                   "Base Docker image (default python:3.11-slim)");
      command->add_flag("--nvidia-docker", request->nvidia_docker,
                        "Run the container with the GPUs");
    }
    if (std::string(type) == "slurm") {
      add_optional(command, "--partition", request->partition,
                   "Slurm partition (default: the cluster's default)");
      add_optional_int(command, "--nodes", request->nodes, "Nodes per run (default 1)");
      add_optional_int(command, "--gpus-per-node", request->gpus_per_node,
                       "GPUs per node (--gpus-per-node for sbatch)");
      add_optional(command, "--time", request->time_limit, "Time limit, HH:MM:SS");
      add_optional(command, "--account", request->account, "Slurm account to charge");
      add_optional(command, "--container", request->container,
                   "Run the script in this image on the nodes");
      add_optional(command, "--container-runtime", request->container_runtime,
                   "docker (default), pyxis or apptainer");
    }
    if (std::string(type) == "local" || std::string(type) == "remote") {
      add_optional(command, "--python", request->python_location,
                   "Python interpreter (default python3)");
    }
    command->add_flag("--force", request->force, "Replace an existing target of that name");
    command->footer(std::string(type) == "slurm"
                        ? examples({"mlw computetarget attach slurm -n hpc -a login.example.com "
                                    "-u me -k --partition gpu --nodes 2 --gpus-per-node 4 "
                                    "--time 02:00:00"})
                    : remote
                        ? examples({"mlw computetarget attach remotedocker -n my_dsvm -a "
                                    "gpu-vm.example.com -u me --password-stdin -k < pw.txt",
                                    "mlw computetarget attach remote -n box -a [::1]:2222 -u me "
                                    "--private-key-file ~/.ssh/id_ed25519"})
                        : examples({"mlw computetarget attach local -n py311 --python python3.11",
                                    "mlw computetarget attach docker -n gpu --base-image "
                                    "pytorch/pytorch --nvidia-docker"}));
    command->callback([&ctx, request] { api::attach(ctx, *request); });
  }
  attach->footer(examples({"mlw computetarget attach local -n mylocal",
                           "mlw computetarget attach remotedocker -n my_dsvm -a vm.example.com -u "
                           "me --password-stdin"}));

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

  auto detach_name = std::make_shared<std::string>();
  auto* detach = group->add_subcommand(
      "detach", "Remove a compute target, its run configuration and stored password");
  detach->add_option("-n,--name", *detach_name, "Target name")->required();
  detach->footer(examples({"mlw computetarget detach -n my_dsvm"}));
  detach->callback([&ctx, detach_name] { api::detach(ctx, *detach_name); });
}

}  // namespace mlw::cli

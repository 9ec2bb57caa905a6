#include "mlw/api/computetarget.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "mlw/config/names.hpp"
#include "mlw/config/secret_store.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/ssh_keys.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "mlw/util/terminal.hpp"

namespace mlw::api {

namespace {

std::string read_password_from_stdin() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) throw UsageError("--password-stdin: nothing was read from standard input");
  return text;
}

std::string current_user() {
  const char* user = std::getenv("USER");
  if (user && *user) return user;
  const char* logname = std::getenv("LOGNAME");
  return logname && *logname ? logname : "root";
}

/// Writes both files or neither: a failure on the second restores the first.
void write_pair(const fs::path& first, const std::string& first_text, const fs::path& second,
                const std::string& second_text) {
  const auto old_first = read_file_if_exists(first);
  atomic_write_file(first, first_text);
  try {
    atomic_write_file(second, second_text);
  } catch (...) {
    std::error_code ec;
    if (old_first) {
      atomic_write_file(first, *old_first);
    } else {
      fs::remove(first, ec);
    }
    throw;
  }
}

/// True when ~/.ssh has a default key or ssh-agent runs: attach then tries them before asking
/// for a password.
bool has_default_login(const ComputeConfig& compute) {
  if (!compute.private_key_file.empty() || std::getenv("SSH_AUTH_SOCK")) return true;
  const fs::path ssh = home_directory() / ".ssh";
  return fs::exists(ssh / "id_ed25519") || fs::exists(ssh / "id_ecdsa");
}

/// The file name of the key pair -k makes for a login (shared by the projects that attach it).
fs::path target_key_path(const Context& ctx, const ComputeConfig& compute) {
  const SshEndpoint endpoint = target_endpoint(compute);
  std::string name = fmt::format("{}@{}_{}_ed25519", endpoint.user, endpoint.host, endpoint.port);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '@' && c != '.' && c != '_' &&
        c != '-') {
      c = '_';
    }
  }
  return ctx.config_dir / "keys" / name;
}

/// The home-relative form of `path` ("~/…") when it is under the home folder.
std::string tilde_path(const fs::path& path) {
  const std::string home = home_directory().string();
  if (!home.empty() && home != "/" && starts_with(path.string(), home + "/")) {
    return "~" + path.string().substr(home.size());
  }
  return path.string();
}

/// Connects once: host key, login, and with -k a key pair installed and checked. Returns how
/// the login works from now on.
std::string check_login(Context& ctx, const AttachRequest& request, ComputeConfig& compute,
                        const std::optional<std::string>& password) {
  ConnectRequest connect;
  connect.accept_new_host_key = request.accept_host_key;
  connect.password = password;
  connect.attaching = true;
  auto shell = ctx.connector->connect(ctx, request.name, compute, connect);
  spdlog::info("logged in to {} as {} ({})", compute.address, compute.username,
               shell->auth_method());
  const TargetKind& kind = kind_of(compute.type);
  if (kind.runner.batch) {
    // A batch system's checks (scheduler, queue or partition, its size), as submit runs them
    // (a refused attach exits 1, not 125).
    const TargetFacts facts = probe_target(*shell, compute, probe_ask(compute));
    std::vector<CheckRow> rows;
    kind.checks({compute, facts, shell->host(), request.name}, rows);
    try {
      refuse_first(rows);
    } catch (const Error& e) {
      throw Error(e.what());  // a refused attach, not a run that could not start
    }
    // What fails without refusing (the batch system would refuse such a job later) is said now.
    for (const CheckRow& row : rows) {
      if (row.result == CheckResult::Fail && row.refusal.empty() && !row.warning.empty()) {
        spdlog::warn("{}", row.warning);
      }
    }
  }
  if (!request.use_ssh_key) return shell->auth_method();
  const fs::path key_file = target_key_path(ctx, compute);
  auto [private_key, public_key] =
      generate_ed25519_key(fmt::format("mlw-{}@{}", request.name, host_name()));
  const ShellResult installed = shell->run_with_input(
      std::string(embedded_script("src/remote/authorize_key.sh")), public_key);
  if (installed.exit_code != 0) {
    throw Error(fmt::format("ssh {}: installing the key in ~/.ssh/authorized_keys failed: {}",
                            compute.address, trim(installed.errors)));
  }
  make_directories(key_file.parent_path(), 0700);
  atomic_write_file(key_file, private_key, 0600);
  atomic_write_file(key_file.string() + ".pub", public_key, 0644);
  ComputeConfig with_key = compute;
  with_key.private_key_file = key_file.string();
  with_key.private_key_passphrase.clear();
  ConnectRequest key_only;
  key_only.only_key_file = true;
  key_only.attaching = true;
  try {
    ctx.connector->connect(ctx, request.name, with_key, key_only);
  } catch (const Error& e) {
    throw Error(
        fmt::format("the key was installed on {} but logging in with it failed ({}); is "
                    "public key login allowed there (PubkeyAuthentication)?",
                    compute.address, e.what()));
  }
  compute.private_key_file = tilde_path(key_file);
  compute.private_key_passphrase.clear();
  return "key " + compute.private_key_file;
}

/// The options of the keys the kind owns, checked as the compute file checks them.
void apply_own_options(const AttachRequest& request, const TargetKind& kind,
                       ComputeConfig& compute) {
  for (const auto& [name, value] : request.own) {
    for (const OwnKey& key : kind.own_keys) {
      if (key.name != name) continue;
      std::string text = value;
      const std::string problem = own_value_problem(key, text);
      if (!problem.empty()) throw UsageError(fmt::format("{} {}", key.attach_flag, problem));
      compute.section[name] = text;
    }
  }
}

/// Refuses options that do not fit the target type, before anything is read or written.
void check_attach_options(const AttachRequest& request, const std::string& type) {
  const TargetKind* kind = find_kind(type);
  if (!kind) {
    const std::vector<std::string> allowed = kind_name_list();
    throw UsageError(fmt::format("unknown target type \"{}\"; one of: {}{}", request.type,
                                 join(allowed, ", "), did_you_mean(request.type, allowed)));
  }
  const bool remote = kind->attach.remote;
  if (!remote &&
      (request.address || request.username || request.password || request.password_stdin ||
       request.private_key_file || request.use_ssh_key || request.accept_host_key)) {
    throw UsageError(fmt::format(
        "-a, -u, -w, --password-stdin, -k, --accept-host-key and --private-key-file are for "
        "remote targets, not {}",
        type));
  }
  if (request.use_ssh_key && request.no_connect) {
    throw UsageError("-k installs a key over SSH, so it cannot be used with --no-connect");
  }
  if (request.password && request.password_stdin) {
    throw UsageError(fmt::format("give the password with {} or --password-stdin, not both",
                                 request.password_option));
  }
  if (request.base_image && !kind->attach.docker) {
    throw UsageError("--base-image is for docker and remotedocker targets");
  }
  if (request.nvidia_docker && !kind->attach.docker) {
    throw UsageError("--nvidia-docker is for docker and remotedocker targets");
  }
  // An option of a key that another kind owns (the 2017 form offers them all).
  for (const auto& [name, value] : request.own) {
    if (kind->has_key(name)) continue;
    std::vector<std::string> owners;
    std::string flag = name;
    for (const TargetKind* other : target_kinds()) {
      for (const OwnKey& key : other->own_keys) {
        if (key.name != name) continue;
        owners.emplace_back(other->name);
        flag = std::string(key.attach_flag);
      }
    }
    throw UsageError(
        fmt::format("{} is for {} targets, not {}", flag, join(owners, " and "), type));
  }
}

/// The settings attach writes: a new target's defaults, or on --force the target's current
/// settings (every key the user set), with only what the command names changed.
ComputeConfig attach_settings(const AttachRequest& request, const std::string& type,
                              const std::optional<ComputeConfig>& previous) {
  ComputeConfig compute = previous.value_or(ComputeConfig{});
  compute.type = type;
  const TargetKind& kind = kind_of(type);
  if (kind.attach.remote) {
    if (request.address) {
      parse_address(*request.address);  // refuses a malformed address before anything is written
      compute.address = *request.address;
    }
    if (compute.address.empty()) {
      throw UsageError(fmt::format("a {} target needs an address: -a HOST[:PORT]", type));
    }
    if (request.username) {
      check_ssh_user(*request.username, "-u: ");
      compute.username = *request.username;
    }
    // Without -u the login user is ~/.ssh/config's User for the address, as ssh has it, and
    // only then the local user.
    if (compute.username.empty()) compute.username = target_endpoint(compute).user;
    if (compute.username.empty()) compute.username = current_user();
    check_ssh_user(compute.username, "the local user name: ");
    // A 2017 secret reference cannot be read; a new password (or -k) replaces it.
    if (starts_with(compute.password, "AzureMlSecret=")) compute.password.clear();
  }
  if (request.private_key_file) compute.private_key_file = *request.private_key_file;
  if (request.base_image) compute.base_docker_image = *request.base_image;
  if (kind.runner.image && compute.base_docker_image.empty()) {
    compute.base_docker_image = "python:3.11-slim";
  }
  if (request.python_location) compute.python_location = *request.python_location;
  if (request.nvidia_docker) compute.nvidia_docker = true;
  apply_own_options(request, kind, compute);
  if (kind.check_keys) {
    const std::string problem = kind.check_keys(compute);
    if (!problem.empty()) throw UsageError(problem);
  }
  return compute;
}

/// What attach prints: the files written and the settings that matter for the target's kind.
nlohmann::ordered_json attach_result(Context& ctx, const std::string& name,
                                     const ComputeConfig& compute, const std::string& login_with) {
  const Project& project = ctx.project();
  nlohmann::ordered_json result = {
      {"name", name},
      {"type", compute.type},
      {"compute_file", project.display(project.compute_path(name))},
      {"run_config_file", project.display(project.run_config_path(name))}};
  if (kind_of(compute.type).attach.remote) {
    result["address"] = compute.address;
    result["username"] = compute.username;
    result["password"] = compute.password.empty()
                             ? "(none stored)"
                             : "stored in " + SecretStore(ctx.config_dir).file().string();
    if (!compute.private_key_file.empty()) result["private_key_file"] = compute.private_key_file;
    if (!login_with.empty()) result["login"] = login_with;
  }
  if (!compute.base_docker_image.empty()) result["base_docker_image"] = compute.base_docker_image;
  if (const TargetKind& kind = kind_of(compute.type); kind.describe) kind.describe(compute, result);
  return result;
}

}  // namespace

void attach(Context& ctx, const AttachRequest& request) {
  validate_name(request.name, "target name");
  const Project& project = ctx.project();
  const TargetKind* found = find_kind(request.type);  // an alias becomes its kind's name
  const std::string type = found ? std::string(found->name) : request.type;
  check_attach_options(request, type);
  const bool remote = kind_of(type).attach.remote;
  const fs::path compute_path = project.compute_path(request.name);
  const fs::path run_config_path = project.run_config_path(request.name);
  if ((fs::exists(compute_path) || fs::exists(run_config_path)) && !request.force) {
    // Name the file that is there (a run configuration may be left without its compute file).
    throw Error(
        fmt::format("target \"{}\" already exists ({}); add --force to replace it", request.name,
                    project.display(fs::exists(compute_path) ? compute_path : run_config_path)));
  }
  const std::optional<ComputeConfig> previous = current_compute(project, request.name);
  ComputeConfig compute = attach_settings(request, type, previous);

  std::optional<std::string> password;
  if (request.password) {
    spdlog::warn("a password given with {} shows in the process list; prefer --password-stdin",
                 request.password_option);
    password = request.password;
  } else if (request.password_stdin) {
    password = read_password_from_stdin();
  } else if (remote && !request.private_key_file && ctx.stdin_is_terminal && !request.no_connect &&
             !has_default_login(compute)) {
    password = read_terminal_line(
        *ctx.err, fmt::format("Password for {}@{}: ", compute.username, compute.address), false);
    if (password->empty()) password.reset();
  }
  SecretStore secrets(ctx.config_dir);
  std::vector<std::string> new_secrets;
  auto cleanup = [&] {
    for (const auto& reference : new_secrets) secrets.remove(reference);
  };
  std::string login_with;
  try {
    if (request.private_key_passphrase) {
      compute.private_key_passphrase =
          secrets.put(request.name, compute.username + "-key", *request.private_key_passphrase);
      new_secrets.push_back(compute.private_key_passphrase);
    }
    if (remote && !request.no_connect) {
      login_with = check_login(ctx, request, compute, password);
      if (request.use_ssh_key) {  // the key logs in now; no password is kept
        password.reset();
        compute.password.clear();
      }
    }
    if (password) {
      compute.password = secrets.put(request.name, compute.username, *password,
                                     endpoint_identity(target_endpoint(compute)));
      new_secrets.push_back(compute.password);
    }
    // On --force, the files keep what the user wrote: the .compute changes only in the keys
    // this command names, the .runconfig not at all.
    const auto old_compute = previous ? read_file_if_exists(compute_path) : std::nullopt;
    const auto old_run_config = read_file_if_exists(run_config_path);
    write_pair(
        compute_path,
        old_compute ? update_compute_text(*old_compute, project.display(compute_path), *previous,
                                          compute, request.name)
                    : render_compute(compute, request.name),
        run_config_path,
        old_run_config.value_or(render_run_config(default_run_config(request.name), request.name)));
  } catch (...) {
    cleanup();
    throw;
  }
  if (previous && !previous->password.empty() && previous->password != compute.password) {
    secrets.remove(previous->password);
  }
  if (previous && !previous->private_key_passphrase.empty() &&
      previous->private_key_passphrase != compute.private_key_passphrase) {
    secrets.remove(previous->private_key_passphrase);
  }
  if (ctx.output().structured()) {
    show_target(ctx, request.name);  // the same object as `computetarget show` and `list`
    return;
  }
  ctx.output().print_object(attach_result(ctx, request.name, compute, login_with));
}

}  // namespace mlw::api

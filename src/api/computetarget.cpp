#include "mlw/api/computetarget.hpp"

#include <termios.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "mlw/config/names.hpp"
#include "mlw/config/secret_store.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::api {

namespace {

bool is_remote(const std::string& type) {
  return type == "remotedocker" || type == "remote" || type == "slurm";
}

std::string read_password_from_stdin() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) throw UsageError("--password-stdin: nothing was read from standard input");
  return text;
}

std::string prompt_password(Context& ctx, const std::string& user, const std::string& host) {
  *ctx.err << fmt::format("Password for {}@{}: ", user, host) << std::flush;
  termios old_mode{};
  const bool terminal = ::tcgetattr(0, &old_mode) == 0;
  if (terminal) {
    termios quiet = old_mode;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(0, TCSAFLUSH, &quiet);
  }
  std::string line;
  std::getline(std::cin, line);
  if (terminal) ::tcsetattr(0, TCSAFLUSH, &old_mode);
  *ctx.err << "\n";
  return line;
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

/// The target's current settings, to find its stored password; a file that no longer parses is
/// reported and yields nothing (its secret, if any, stays in the store).
std::optional<ComputeConfig> current_settings(const Project& project, const std::string& name) {
  if (!fs::exists(project.compute_path(name))) return std::nullopt;
  try {
    return load_compute(project, name);
  } catch (const Error& e) {
    spdlog::warn("{}", e.what());
    return std::nullopt;
  }
}

}  // namespace

void attach(Context& ctx, const AttachRequest& request) {
  validate_name(request.name, "target name");
  const Project& project = ctx.project();
  ComputeConfig compute;
  compute.type = request.type == "localdocker" ? "docker" : request.type;
  const auto& types = compute_types();
  if (std::find(types.begin(), types.end(), compute.type) == types.end() ||
      compute.type == "slurm") {
    const std::vector<std::string> allowed = {"local", "docker", "remotedocker", "remote"};
    throw UsageError(fmt::format("unknown target type \"{}\"; one of: {}{}", request.type,
                                 join(allowed, ", "), did_you_mean(request.type, allowed)));
  }
  const bool remote = is_remote(compute.type);
  if (remote && !request.address) {
    throw UsageError(fmt::format("a {} target needs an address: -a HOST[:PORT]", compute.type));
  }
  if (!remote && (request.address || request.username || request.password ||
                  request.password_stdin || request.private_key_file)) {
    throw UsageError(fmt::format(
        "-a, -u, -w, --password-stdin and --private-key-file are for remote targets, not {}",
        compute.type));
  }
  if (request.password && request.password_stdin) {
    throw UsageError("give the password with -w or --password-stdin, not both");
  }
  if (request.base_image && compute.type != "docker" && compute.type != "remotedocker") {
    throw UsageError("--base-image is for docker and remotedocker targets");
  }
  if (request.nvidia_docker && compute.type != "docker" && compute.type != "remotedocker") {
    throw UsageError("--nvidia-docker is for docker and remotedocker targets");
  }
  const fs::path compute_path = project.compute_path(request.name);
  const fs::path run_config_path = project.run_config_path(request.name);
  if ((fs::exists(compute_path) || fs::exists(run_config_path)) && !request.force) {
    throw Error(fmt::format("target \"{}\" already exists ({}); add --force to replace it",
                            request.name, project.display(compute_path)));
  }
  const std::optional<ComputeConfig> previous = current_settings(project, request.name);
  if (remote) {
    parse_address(*request.address);  // refuses a malformed address before anything is written
    compute.address = *request.address;
    compute.username = request.username.value_or(current_user());
  }
  if (request.private_key_file) compute.private_key_file = *request.private_key_file;
  if (compute.type == "docker" || compute.type == "remotedocker") {
    compute.base_docker_image = request.base_image.value_or("python:3.11-slim");
  }
  if (request.python_location) compute.python_location = *request.python_location;
  compute.nvidia_docker = request.nvidia_docker;

  std::optional<std::string> password;
  if (request.password) {
    spdlog::warn("a password given with -w shows in the process list; prefer --password-stdin");
    password = request.password;
  } else if (request.password_stdin) {
    password = read_password_from_stdin();
  } else if (remote && !request.private_key_file && ctx.stdin_is_terminal) {
    password = prompt_password(ctx, compute.username, compute.address);
    if (password->empty()) password.reset();
  }
  SecretStore secrets(ctx.config_dir);
  if (password) compute.password = secrets.put(request.name, compute.username, *password);
  try {
    write_pair(compute_path, render_compute(compute, request.name), run_config_path,
               render_run_config(default_run_config(request.name), request.name));
  } catch (...) {
    if (!compute.password.empty()) secrets.remove(compute.password);
    throw;
  }
  if (previous && !previous->password.empty() && previous->password != compute.password) {
    secrets.remove(previous->password);
  }
  nlohmann::ordered_json result = {{"name", request.name},
                                   {"type", compute.type},
                                   {"compute_file", project.display(compute_path)},
                                   {"run_config_file", project.display(run_config_path)}};
  if (remote) {
    result["address"] = compute.address;
    result["username"] = compute.username;
    result["password"] =
        compute.password.empty() ? "(none stored)" : "stored in " + secrets.file().string();
  }
  if (!compute.base_docker_image.empty()) result["baseDockerImage"] = compute.base_docker_image;
  ctx.output().print_object(result);
}

void list_targets(Context& ctx) {
  const Project& project = ctx.project();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& name : project.compute_names()) {
    nlohmann::ordered_json row = {{"name", name}};
    try {
      const ComputeConfig compute = load_compute(project, name);
      row["type"] = compute.type;
      row["address"] = compute.address;
      row["baseDockerImage"] = compute.base_docker_image;
    } catch (const Error& e) {
      spdlog::warn("{}", e.what());
      row["type"] = "(invalid)";
    }
    row["run_config"] = fs::exists(project.run_config_path(name)) ? name + ".runconfig" : "";
    rows.push_back(row);
  }
  ctx.output().print_list(rows, {{"name", "NAME"},
                                 {"type", "TYPE"},
                                 {"address", "ADDRESS"},
                                 {"baseDockerImage", "BASE IMAGE"},
                                 {"run_config", "RUN CONFIG"}});
}

void show_target(Context& ctx, const std::string& name) {
  const Project& project = ctx.project();
  const ComputeConfig compute = load_compute(project, name);
  nlohmann::ordered_json result = {{"name", name},
                                   {"file", project.display(project.compute_path(name))}};
  for (const auto& spec : compute_keys()) {
    bool applies = spec.applies_to.empty();
    for (auto t : spec.applies_to) applies = applies || t == compute.type;
    if (!applies) continue;
    result[std::string(spec.name)] = json_value(spec, compute);
  }
  ctx.output().print_object(result);
}

void detach(Context& ctx, const std::string& name) {
  validate_name(name, "target name");
  const Project& project = ctx.project();
  const fs::path compute_path = project.compute_path(name);
  if (!fs::exists(compute_path)) load_compute(project, name);  // throws, naming the known targets
  const std::optional<ComputeConfig> compute = current_settings(project, name);
  std::error_code ec;
  fs::remove(compute_path, ec);
  if (ec) throw Error("cannot remove " + compute_path.string() + ": " + ec.message());
  fs::remove(project.run_config_path(name), ec);
  bool secret_removed = false;
  if (compute && !compute->password.empty()) {
    secret_removed = SecretStore(ctx.config_dir).remove(compute->password);
  }
  ctx.output().print_object(
      {{"detached", name},
       {"removed", {project.display(compute_path), project.display(project.run_config_path(name))}},
       {"secret_removed", secret_removed}});
}

}  // namespace mlw::api

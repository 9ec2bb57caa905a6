#include "mlw/api/computetarget.hpp"

#include <spdlog/spdlog.h>

#include "mlw/config/gpu_watch.hpp"
#include "mlw/config/names.hpp"
#include "mlw/config/secret_store.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/util/fs.hpp"

namespace mlw::api {

namespace {

/// A compute file's key as the output's keys are written: "baseDockerImage" as
/// "base_docker_image".
std::string snake_case(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c >= 'A' && c <= 'Z') {
      out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

/// The one JSON object of a target (docs/cli.md "Output schema"), for `list` and `show` alike;
/// a file that does not load throws, or with `keep_invalid` is the object with its problem.
nlohmann::ordered_json target_object(const Project& project, const std::string& name,
                                     bool keep_invalid) {
  nlohmann::ordered_json result = {{"name", name},
                                   {"file", project.display(project.compute_path(name))}};
  try {
    const ComputeConfig compute = load_compute(project, name);
    for (const auto& spec : compute_keys()) {
      bool applies = spec.applies_to.empty();
      for (auto t : spec.applies_to) applies = applies || t == compute.type;
      if (applies && !spec.ignored) result[snake_case(spec.name)] = json_value(spec, compute);
    }
    // The keys the target's kind owns, typed as the kind declares them.
    if (const ComputeKind* kind = find_compute_kind(compute.type)) {
      for (const OwnKey& key : kind->own) {
        const auto value = compute.section.find(std::string(key.name));
        if (value == compute.section.end()) continue;
        nlohmann::ordered_json json = value->second;
        if (key.kind == ValueKind::Int) json = std::stoll(value->second);
        if (key.kind == ValueKind::Bool) json = value->second == "true";
        result[snake_case(key.name)] = json;
      }
    }
    if (const IdleGpuPolicy& idle = compute.idle_gpu; idle.set) {
      result["idle_gpu"] = {
          {"below", idle.below}, {"minutes", idle.minutes}, {"action", idle.action}};
    }
    result["problem"] = nullptr;
  } catch (const Error& e) {
    if (!keep_invalid) throw;
    spdlog::warn("{}", e.what());
    result["type"] = "(invalid)";
    result["problem"] = e.what();
  }
  result["run_config"] =
      fs::exists(project.run_config_path(name))
          ? nlohmann::ordered_json(project.display(project.run_config_path(name)))
          : nlohmann::ordered_json();
  return result;
}

}  // namespace

void list_targets(Context& ctx) {
  const Project& project = ctx.project();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& name : project.compute_names())
    rows.push_back(target_object(project, name, true));
  ctx.output().print_list(rows, {{"name", "NAME"},
                                 {"type", "TYPE"},
                                 {"address", "ADDRESS"},
                                 {"base_docker_image", "BASE IMAGE"},
                                 {"run_config", "RUN CONFIG"}});
}

void show_target(Context& ctx, const std::string& name) {
  ctx.output().print_object(target_object(ctx.project(), name, false));
}

void detach(Context& ctx, const std::string& name) {
  validate_name(name, "target name");
  const Project& project = ctx.project();
  const fs::path compute_path = project.compute_path(name);
  if (!fs::exists(compute_path)) load_compute(project, name);  // throws, naming the known targets
  const std::optional<ComputeConfig> compute = current_compute(project, name);
  std::error_code ec;
  fs::remove(compute_path, ec);
  if (ec) throw Error("cannot remove " + compute_path.string() + ": " + ec.message());
  fs::remove(project.run_config_path(name), ec);
  // Every secret the target referenced goes with it: its password and its key's passphrase.
  bool secret_removed = false;
  if (compute) {
    for (const std::string* reference : {&compute->password, &compute->private_key_passphrase}) {
      if (!reference->empty() && SecretStore(ctx.config_dir).remove(*reference)) {
        secret_removed = true;
      }
    }
  }
  ctx.output().print_object(
      {{"detached", name},
       {"removed", {project.display(compute_path), project.display(project.run_config_path(name))}},
       {"secret_removed", secret_removed}});
}

}  // namespace mlw::api

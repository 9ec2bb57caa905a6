#include "mlw/api/computetarget.hpp"

#include <spdlog/spdlog.h>

#include "mlw/config/names.hpp"
#include "mlw/config/secret_store.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/util/fs.hpp"

namespace mlw::api {

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

#include "data_run.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "mlw/config/targets.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::api {

OpenStore open_data_store(Context& ctx, const std::string& name) {
  const Project& project = ctx.project();
  std::string target = name;
  if (!fs::exists(project.root / "aml_config" / (name + ".compute")) &&
      fs::exists(project.root / "aml_config" / (name + ".runconfig"))) {
    const RunConfig config = load_run_config(project, name);
    if (!config.target.empty()) target = config.target;
  }
  const ComputeConfig compute = load_compute(project, target);
  return {target, ctx.executor(compute.type)->data_store(ctx, target, compute)};
}

DataPushResult push_version(Context& ctx, DataStore& store, const std::string& target,
                            const DataVersion& version, const DataManifest& manifest,
                            DataCatalog& catalog) {
  try {
    return push_data(ctx, store, version, manifest, &catalog);
  } catch (const DataSourceChanged& changed) {
    std::vector<std::string> asked;
    for (const auto& holder : catalog.holders(version.id)) {
      if (holder == target) continue;
      asked.push_back(holder);
      try {
        OpenStore from = open_data_store(ctx, holder);
        bool ready = false;
        for (const auto& answer : data_ready(from.store, {version.id})) {
          ready = ready || (answer.id == version.id && answer.state == "ready");
        }
        if (!ready) {
          catalog.note_target(version.id, holder, false);
          continue;
        }
        spdlog::info("{}; its files come from {} instead", changed.what(), holder);
        return push_data(ctx, store, version, manifest, &catalog, &from.store);
      } catch (const Error& e) {
        spdlog::warn("{} could not give {}: {}", holder, version.label(), e.what());
      }
    }
    throw Error(
        fmt::format("{}; no other target holds {} ({})", changed.what(), version.label(),
                    asked.empty() ? "none was seen holding it" : "asked: " + join(asked, ", ")),
        changed.code());
  }
}

std::string DataLabel::file_of(const std::string& object) const {
  if (manifest) {
    for (const auto& entry : manifest->entries) {
      if (entry.link_target.empty() && data_object_name(entry) == object) return entry.path;
    }
  }
  return object;
}

DataLabel label_of(const DataCatalog& catalog, const std::string& id) {
  for (const auto& name : catalog.names()) {
    for (const auto& v : catalog.versions(name)) {
      if (v.id != id) continue;
      DataLabel label{v.label(), std::nullopt};
      try {
        label.manifest = catalog.manifest(v);
      } catch (const Error& e) {
        spdlog::debug("{}", e.what());
      }
      return label;
    }
  }
  return {id.substr(0, 12), std::nullopt};
}

std::vector<DataUse> plan_data(const Project& project, const std::vector<std::string>& configured,
                               const std::vector<std::string>& requested) {
  std::map<std::string, DataRequest> by_name;
  std::vector<std::string> order;
  for (const auto* items : {&configured, &requested}) {
    for (const auto& item : *items) {
      DataRequest request = parse_data_request(item);
      const std::string name = request.spec.substr(0, request.spec.find('@'));
      if (!by_name.count(name)) order.push_back(name);
      by_name[name] = std::move(request);
    }
  }
  if (order.empty()) return {};
  DataCatalog catalog(project.state_dir());
  std::vector<DataUse> uses;
  std::map<std::string, std::string> variables;
  std::set<std::string> mounts;
  for (const auto& name : order) {
    const DataRequest& request = by_name[name];
    const DataVersion v = catalog.resolve(request.spec);
    DataUse use{v.name, v.number, v.id,
                request.mount.empty() ? "/mlw/data/" + v.name : request.mount};
    if (const auto [it, fresh] = variables.emplace(data_variable(name), name); !fresh) {
      throw UsageError(fmt::format("data sets {} and {} would both be {} in the run: rename one",
                                   it->second, name, it->first));
    }
    if (!mounts.insert(use.mount).second) {
      throw UsageError(fmt::format("two data sets are mounted at {}", use.mount));
    }
    uses.push_back(std::move(use));
  }
  return uses;
}

void place_run_data(Context& ctx, Executor& executor, RunPlan& plan) {
  if (plan.record.data.empty()) return;
  DataStore store = executor.data_store(ctx, plan.target_name, plan.compute);
  const std::string run_dir =
      store.runs.empty() ? plan.run_dir.string() : store.runs + "/" + plan.record.run_id;
  std::vector<std::string> ids;
  for (const auto& use : plan.record.data) ids.push_back(use.id);
  auto answers = data_ready(store, ids, run_dir, plan.record.run_id);
  const auto use_of = [&plan](const std::string& id) {
    return std::find_if(plan.record.data.begin(), plan.record.data.end(),
                        [&id](const DataUse& u) { return u.id == id; });
  };
  bool pushed = false;
  DataCatalog catalog(plan.project.state_dir());
  for (const auto& answer : answers) {
    if (answer.state == "ready") continue;
    const auto use = use_of(answer.id);
    if (use == plan.record.data.end()) continue;
    DataVersion v;
    try {
      v = catalog.resolve(use->name + "@" + use->id);
    } catch (const Error&) {
      throw Error(
          fmt::format("{} ({}) is neither on {} nor in this project's data sets any more; "
                      "add its folder again (mlw data add {} PATH)",
                      use->label(), use->id.substr(0, 7), plan.target_name, use->name));
    }
    if (answer.state == "damaged") {
      spdlog::warn("{} on {} was written to ({}): its changed files are sent again", v.label(),
                   plan.target_name, printable(answer.path, 4096));
    }
    push_version(ctx, store, plan.target_name, v, catalog.manifest(v), catalog);
    catalog.note_target(v.id, plan.target_name, true);
    pushed = true;
  }
  if (pushed) answers = data_ready(store, ids, run_dir, plan.record.run_id);
  for (const auto& answer : answers) {
    const auto use = use_of(answer.id);
    if (use == plan.record.data.end()) continue;
    if (answer.state != "ready") {
      throw Error(fmt::format("{} is not ready on {} after it was pushed ({})", use->label(),
                              plan.target_name, answer.state));
    }
    if (store.containers && answer.path.find_first_of(":,") != std::string::npos) {
      throw Error(
          fmt::format("{}: the data store's folder {} holds ':' or ',', which docker's "
                      "-v cannot mount; set dataStore to another folder",
                      plan.target_name, answer.path));
    }
    if (!store.containers && use->mount != "/mlw/data/" + use->name) {
      spdlog::warn("{}: the mount point {} applies in containers; on {} the run reads {} at ${}",
                   use->label(), use->mount, plan.target_name, answer.path,
                   data_variable(use->name));
    }
    plan.data_paths[use->name] = answer.path;
    spdlog::info("data {} ({}) at {}", use->label(), use->id.substr(0, 7),
                 store.containers ? use->mount : answer.path);
  }
}

std::vector<std::string> data_diff_lines(const Project& project, const RunRecord& a,
                                         const RunRecord& b) {
  std::map<std::string, std::pair<const DataUse*, const DataUse*>> sets;
  for (const auto& use : a.data) sets[use.name].first = &use;
  for (const auto& use : b.data) sets[use.name].second = &use;
  DataCatalog catalog(project.state_dir());
  std::vector<std::string> lines;
  auto first_names = [](const std::vector<std::string>& paths) {
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < paths.size() && i < 3; ++i) shown.push_back(printable(paths[i]));
    return join(shown, ", ") + (paths.size() > 3 ? ", …" : "");
  };
  for (const auto& [name, pair] : sets) {
    const auto [before, after] = pair;
    if (!before || !after) {
      lines.push_back(fmt::format("data {}: {} → {}", name, before ? before->label() : "(none)",
                                  after ? after->label() : "(none)"));
      continue;
    }
    if (before->id == after->id) continue;
    std::string detail = "its files are not known here";
    try {
      DataVersion va;
      va.name = name;
      va.id = before->id;
      DataVersion vb = va;
      vb.id = after->id;
      const DataDiff diff = diff_data(catalog.manifest(va), catalog.manifest(vb));
      std::vector<std::string> parts;
      if (!diff.added.empty())
        parts.push_back(fmt::format("{} added ({})", diff.added.size(), first_names(diff.added)));
      if (!diff.removed.empty())
        parts.push_back(
            fmt::format("{} removed ({})", diff.removed.size(), first_names(diff.removed)));
      if (!diff.changed.empty())
        parts.push_back(
            fmt::format("{} changed ({})", diff.changed.size(), first_names(diff.changed)));
      detail = join(parts, ", ");
    } catch (const Error& e) {
      spdlog::debug("{}", e.what());
    }
    lines.push_back(
        fmt::format("data {}: {} → {}: {}", name, before->label(), after->label(), detail));
  }
  return lines;
}

}  // namespace mlw::api

// The table of target kinds: one row per kind, each defined in its own file of this folder.

#include <fmt/format.h>

#include <algorithm>

#include "mlw/exec/target.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

const TargetKind& local_kind();
const TargetKind& docker_kind();
const TargetKind& remotedocker_kind();
const TargetKind& remote_kind();
const TargetKind& slurm_kind();
const TargetKind& sge_kind();

const std::vector<const TargetKind*>& target_kinds() {
  static const std::vector<const TargetKind*> table = {
      &local_kind(),  &docker_kind(), &remotedocker_kind(),
      &remote_kind(), &slurm_kind(),  &sge_kind(),
  };
  return table;
}

const std::vector<ComputeKind>& compute_kinds() {
  static const std::vector<ComputeKind> kinds = [] {
    std::vector<ComputeKind> out;
    for (const TargetKind* kind : target_kinds()) {
      out.push_back({kind->name, kind->aliases, kind->keys, kind->own_keys});
    }
    return out;
  }();
  return kinds;
}

bool TargetKind::has_key(std::string_view key) const {
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return true;
  return std::any_of(own_keys.begin(), own_keys.end(),
                     [&](const OwnKey& own) { return own.name == key; });
}

const TargetKind* find_kind(std::string_view type) {
  for (const TargetKind* kind : target_kinds()) {
    if (kind->name == type) return kind;
    if (std::find(kind->aliases.begin(), kind->aliases.end(), type) != kind->aliases.end()) {
      return kind;
    }
  }
  return nullptr;
}

const TargetKind& kind_of(std::string_view type) {
  if (const TargetKind* kind = find_kind(type)) return *kind;
  throw Error(fmt::format("unknown target type \"{}\"", type));
}

std::shared_ptr<ExecutorSource> kind_executors() {
  class Table : public ExecutorSource {
   public:
    std::unique_ptr<Executor> make(const std::string& type) override {
      const TargetKind& kind = kind_of(type);
      if (kind.make_executor) return kind.make_executor();
      return std::make_unique<TargetExecutor>(kind);
    }
  };
  return std::make_shared<Table>();
}

ProbeAsk probe_ask(const ComputeConfig& compute) {
  const TargetKind& kind = kind_of(compute.type);
  // The boot hook of restartAfterReboot: for the kinds a monitor runs on a machine reached by SSH.
  const bool reboot = kind.runner.detached && !kind.runner.batch && kind.place->connects();
  return {kind.runner.image, kind.has_key("pythonLocation"),
          kind.probe_section ? kind.probe_section(compute) : std::string(), reboot};
}

std::vector<std::string> kind_name_list() {
  std::vector<std::string> names;
  for (const TargetKind* kind : target_kinds()) names.emplace_back(kind->name);
  return names;
}

std::string kind_names(std::string_view separator) {
  return compute_kind_names(separator);
}

}  // namespace mlw

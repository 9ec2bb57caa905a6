// The table of target kinds: one row per kind, each defined in its own file of this folder.

#include <fmt/format.h>

#include <algorithm>

#include "mlw/kinds/kind.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

const TargetKind& local_kind();
const TargetKind& docker_kind();
const TargetKind& remotedocker_kind();
const TargetKind& remote_kind();
const TargetKind& slurm_kind();

const std::vector<const TargetKind*>& target_kinds() {
  static const std::vector<const TargetKind*> table = {
      &local_kind(), &docker_kind(), &remotedocker_kind(), &remote_kind(), &slurm_kind(),
  };
  return table;
}

bool TargetKind::has_key(std::string_view key) const {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
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

std::vector<std::string> kind_name_list() {
  std::vector<std::string> names;
  for (const TargetKind* kind : target_kinds()) names.emplace_back(kind->name);
  return names;
}

std::string kind_names(std::string_view separator) {
  return join(kind_name_list(), std::string(separator));
}

}  // namespace mlw

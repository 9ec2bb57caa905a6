#pragma once

// What `mlw data`, submit, rerun and history share about data sets (private to src/api/).

#include <optional>
#include <string>
#include <vector>

#include "mlw/context.hpp"
#include "mlw/data/catalog.hpp"
#include "mlw/exec/data_store.hpp"
#include "mlw/exec/executor.hpp"

namespace mlw::api {

/// A target's data store, reached.
struct OpenStore {
  std::string target;
  DataStore store;
};

/// Reaches the data store of a target of the project (`-c NAME`: a target, or a run
/// configuration whose Target it is).
OpenStore open_data_store(Context& ctx, const std::string& name);

/// Pushes a version to `store` (target `target`) from the folder it was added from; where a file
/// there changed since, from another target that holds it (the catalog's holders, asked in
/// turn); throws one line naming the changed file and the targets asked where none has it.
DataPushResult push_version(Context& ctx, DataStore& store, const std::string& target,
                            const DataVersion& version, const DataManifest& manifest,
                            DataCatalog& catalog);

/// A version as people name it, from its id: `NAME@N`, or the id's first digits where the
/// project does not know it.
struct DataLabel {
  std::string text;
  std::optional<DataManifest> manifest;
  /// The first file of the version whose content is `object` (the object's name where none).
  std::string file_of(const std::string& object) const;
};
/// The label of the version with id `id`.
DataLabel label_of(const DataCatalog& catalog, const std::string& id);

/// The data sets a run mounts: the run configuration's `data:` items, then submit's --data
/// (which replace the run configuration's of the same name), each `NAME[@V][:MOUNT]`
/// resolved against the project's catalog.
std::vector<DataUse> plan_data(const Project& project, const std::vector<std::string>& configured,
                               const std::vector<std::string>& requested);

/// Before a run starts: makes sure its target holds every version it mounts (pushing what it
/// lacks), marks them used by the run there, and fills plan.data_paths.
void place_run_data(Context& ctx, Executor& executor, RunPlan& plan);

/// `history diff`: a line per data set that differs between two runs ("data imagenet: @2 → @3:
/// 1 added, 2 changed (a.jpg, b.jpg)"); none where they mount the same.
std::vector<std::string> data_diff_lines(const Project& project, const RunRecord& a,
                                         const RunRecord& b);

}  // namespace mlw::api

#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mlw/context.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"

namespace mlw {

/// One step that ships a snapshot: moves the complete objects of interrupted uploads into the
/// store; reads `U\n` and a U-byte tar of objects sent ahead (each checked by its sha256, moved
/// into the store; damaged ones are printed and fail the script); reads `N\n` and N bytes of
/// object names and, when the store lacks any, prints them and `:missing` and exits 3, making
/// nothing; else reads `T\n` and a T-byte tar that makes the run folder from the store (hard
/// links), atomically by rename (none when T is 0).
std::string ship_script(const std::string& store, const std::string& nonce,
                        const std::string& run_dir);

/// A progress line on a terminal (none otherwise, or with -q) while `count` new files of `total`
/// bytes are sent: call it with the bytes sent so far.
std::function<void(std::uint64_t)> ship_progress(Context& ctx, std::uint64_t total,
                                                 std::size_t count);

/// The names of the objects a snapshot needs in the target's store (sha256, `.x` when
/// executable), sorted.
std::vector<std::string> object_names(const Manifest& manifest);

/// For `experiment prepare`: the ship as a section of the probe's step (its round trip): what
/// this project's record of the target's store does not name (up to 8 MiB) goes ahead of the
/// object names, with no run folder; the store says what it still lacks (probe_target reads
/// its answer into TargetFacts::ship_said and ship_code).
ProbeShip ship_in_probe(const RunPlan& plan, const Shell& shell);

/// The run folder's tree as a tar (the snapshot as hard links into `store`/objects, the helper,
/// the environment's build files), for a step that makes the folder from a store that holds
/// every object (MonitorDriver's launch).
std::string run_tree_tar(const RunPlan& plan, const EnvironmentSpec& env, const std::string& store);

/// Records that the target's store holds every object of the plan's snapshot.
void remember_shipped(const RunPlan& plan, const Shell& shell);

/// The files mlw puts beside a run's snapshot: the Python helper and the environment's build
/// files, as (path in the run folder, contents).
std::vector<std::pair<std::string, std::string>> run_folder_files(const EnvironmentSpec& env);

/// Ships the snapshot, in one round trip where mlw knows what the target lacks: `lacking` (the
/// probe asked), else the objects this project's record of the target's store does not name
/// (.mlw/cache/shipped/); they go ahead of the names and, with `make_run_folder`, the run
/// folder's tree. Without either, the store is asked first. A store that lacks more than was
/// sent says so, and those are sent once more. `store` is the target's ~/.mlw; shipping fails
/// with exit code 125 and the target's words.
void ship_snapshot(Context& ctx, Shell& shell, const RunPlan& plan, const std::string& store,
                   const EnvironmentSpec& env, const std::string& run_dir,
                   bool make_run_folder = true, const std::vector<std::string>* lacking = nullptr);

}  // namespace mlw

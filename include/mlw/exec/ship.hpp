#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mlw/context.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/remote/shell.hpp"

namespace mlw {

/// One conversation that ships a snapshot: moves the complete objects of interrupted uploads
/// into the store; reads `N\n` and N bytes of object names and prints those the store lacks,
/// then `:end`; reads `U T\n`, then a U-byte tar of those objects (each checked by its sha256,
/// moved into the store; damaged ones are printed and fail the script) and a T-byte tar that
/// makes the run folder from the store (hard links), atomically by rename (none when T is 0).
/// With `end_when_complete` (no run folder to make) a store that lacks nothing ends after `:end`.
std::string ship_script(const std::string& store, const std::string& nonce,
                        const std::string& run_dir, bool end_when_complete = false);

/// The files mlw puts beside a run's snapshot: the Python helper and the environment's build
/// files, as (path in the run folder, contents).
std::vector<std::pair<std::string, std::string>> run_folder_files(const EnvironmentSpec& env);

/// Ships the snapshot in one round trip (ship_script): the target names the objects its store
/// lacks, then receives those and, with `make_run_folder`, the run folder's tree.
/// `store` is the target's ~/.mlw; shipping fails with exit code 125 and the target's words.
void ship_snapshot(Context& ctx, Shell& shell, const RunPlan& plan, const std::string& store,
                   const EnvironmentSpec& env, const std::string& run_dir,
                   bool make_run_folder = true);

}  // namespace mlw

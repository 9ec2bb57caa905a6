#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlw/context.hpp"
#include "mlw/history/store.hpp"

namespace mlw::api {

/// Prints runs, newest first.
void list_runs(Context& ctx, const RunQuery& query, const std::string& data = "");
/// Prints one run's record with its metrics (and, on a terminal, a sparkline per metric).
void show_run(Context& ctx, const std::optional<std::string>& run_id);
/// Prints a run's driver log; with `follow`, keeps printing until the run ends.
void show_logs(Context& ctx, const std::string& run_id, bool follow);
/// Copies a run's outputs (or one artifact) into `destination` (default ./<run_id>/).
void download(Context& ctx, const std::string& run_id,
              const std::optional<std::string>& destination,
              const std::optional<std::string>& artifact);
/// Prints the runs' metrics side by side.
void compare(Context& ctx, const std::vector<std::string>& run_ids);
/// `history compare --sweep S`: the sweep's runs best first by its metric (or `sort`), its
/// parameters as columns, and what early stopping saved.
void compare_sweep(Context& ctx, const std::string& sweep_id,
                   const std::optional<std::string>& sort);
/// `history diff -r A -r B`: what differs between two runs (files, packages, arguments,
/// parameters, -e names, target, image, git commit); nothing when nothing does.
void diff_runs(Context& ctx, const std::string& first, const std::string& second);
/// Reads `param:lr`, `metric:loss` or a bare name (a parameter).
RunField parse_run_field(const std::string& text);
/// Reads a filter: `lr<0.1`, `metric:loss<=0.2`, `optimizer=adam` (<, <=, >, >=, =, !=).
RunCondition parse_run_condition(const std::string& text);

}  // namespace mlw::api

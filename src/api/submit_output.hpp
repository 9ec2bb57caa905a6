#pragma once

// What `experiment submit` prints of a run (private to src/api/): its live output and summary.

#include <cstddef>
#include <filesystem>
#include <ostream>

#include "mlw/context.hpp"
#include "mlw/history/record.hpp"

namespace mlw::api {

/// Where the run's live output and messages go: stdout on a table; stderr when stdout carries
/// data (json, yaml, tsv), so that it holds only the data.
std::ostream& live_stream(Context& ctx);

/// Writes a run's live output: its lines go to the live stream, mlw's own notes from before the
/// script started (lines marked k_live_note) to stderr. The state carries across reads.
struct LiveWriter {
  bool at_line_start = true;
  bool in_note = false;
  /// Writes `size` bytes read from the run's live pipe.
  void write(Context& ctx, const char* data, std::size_t size);
};

/// The submit's exit code for a finished run (spec §4).
int exit_code_of(const RunRecord& record);

/// True when the run failed before its script started (a failed build, a missing runtime).
bool failed_before_its_script(const RunRecord& record);

/// The run's summary: the record in json/yaml/tsv; in a table, its status, duration, outputs,
/// metrics and problems (on stderr, without the first problem, for a run that failed before its
/// script: that problem is the error line).
void print_summary(Context& ctx, const RunRecord& record, const std::filesystem::path& run_dir);

}  // namespace mlw::api

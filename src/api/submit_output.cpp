// What `experiment submit` prints of a run: its live output (mlw's own notes from before the
// script on stderr) and its summary.
#include "submit_output.hpp"

#include <fmt/format.h>

#include "mlw/exec/executor.hpp"
#include "mlw/history/system_use.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::api {

std::ostream& live_stream(Context& ctx) {
  return ctx.output_format == OutputFormat::Table ? *ctx.out : *ctx.err;
}

void LiveWriter::write(Context& ctx, const char* data, std::size_t size) {
  std::ostream& live = live_stream(ctx);
  std::size_t from = 0;
  auto flush_to = [&](std::size_t end) {
    if (end <= from) return;
    std::ostream& stream = in_note ? *ctx.err : live;
    stream.write(data + from, static_cast<std::streamsize>(end - from));
  };
  for (std::size_t i = 0; i < size; ++i) {
    if (at_line_start && data[i] == k_live_note) {
      flush_to(i);
      in_note = true;
      from = i + 1;
    }
    at_line_start = data[i] == '\n';
    if (at_line_start && in_note) {
      flush_to(i + 1);
      in_note = false;
      from = i + 1;
    }
  }
  flush_to(size);
  live.flush();
  ctx.err->flush();
}

int exit_code_of(const RunRecord& record) {
  if (record.exit_code) return *record.exit_code;
  if (record.status == status::k_completed) return 0;
  return exit_code::k_cannot_start;
}

bool failed_before_its_script(const RunRecord& record) {
  return record.start_ms == 0 && record.status == status::k_failed && !record.problems.empty();
}

void print_summary(Context& ctx, const RunRecord& record, const std::filesystem::path& run_dir) {
  if (ctx.output_format == OutputFormat::None) return;
  if (ctx.output().structured()) {
    ctx.output().print_object(record.to_public_json(run_dir.string()));
    return;
  }
  if (ctx.output_format == OutputFormat::Tsv) {
    ctx.output().print_list(
        nlohmann::ordered_json::array({record.to_public_json(run_dir.string())}),
        run_tsv_columns());
    return;
  }
  // A run that ended before its script started (a failed build, say) ran for no time: say how
  // long mlw worked on it instead of "in 0.00s".
  const bool never_started = record.start_ms == 0 && record.end_ms > record.created_ms;
  std::string summary =
      fmt::format("\nRun {}: {} {}, exit code {}\n", record.run_id, record.status,
                  never_started ? fmt::format("after {}, before the script started",
                                              format_duration(record.end_ms - record.created_ms))
                                : "in " + format_duration(record.duration_ms(record.end_ms)),
                  record.exit_code ? std::to_string(*record.exit_code) : "none");
  if (!record.outputs.empty()) {
    summary +=
        fmt::format("Outputs: {} file(s) in .mlw/runs/{}/outputs (mlw history download -r {})\n",
                    record.outputs.size(), record.run_id, record.run_id);
  }
  if (!record.metrics.empty()) {
    std::vector<std::string> parts;
    for (const auto& [name, value] : record.metrics.items()) {
      if (starts_with(name, "sys/")) continue;  // the sampler's: said below
      parts.push_back(name + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
    }
    if (!parts.empty()) summary += "Metrics: " + join(parts, ", ") + "\n";
  }
  for (const auto& line : describe_system_use(record.system)) summary += line + "\n";
  // A run that failed before its script started failed as a command does: its summary goes to
  // stderr, and its first problem is the one `mlw: error:` line that follows (said once).
  const bool failed_before_start = failed_before_its_script(record);
  for (std::size_t i = failed_before_start ? 1 : 0; i < record.problems.size(); ++i) {
    summary += "Problem: " + record.problems[i] + "\n";
  }
  (failed_before_start ? *ctx.err : *ctx.out) << summary << std::flush;
}

}  // namespace mlw::api

// metrics.jsonl as a script (or a target) writes it: streamed, bounded, never recursing deep.
#include "fuzz_util.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/util/fs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = mlw::fuzz::scratch() / "metrics.jsonl";
  mlw::atomic_write_file(file, std::string(mlw::fuzz::text(data, size)));
  std::vector<std::string> problems;
  const auto last = mlw::last_metric_values(file, &problems);
  std::size_t skipped = 0;
  const auto series = mlw::read_metric_series(file, &skipped);
  for (const auto& [name, values] : series) mlw::sparkline(values);
  for (const auto& decision : mlw::read_decisions(file)) (void)decision.text.size();
  last.dump();
  return 0;
}
